/**
 * One vocabulary: the names this package uses are the wasm core's tables (src/vocab.rs) or are
 * checked against them here, so a code, status or constant added on one side and not the other
 * fails this test.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as api from 'plog-sequencer';
import { errorCodes, facadeConstants, recordSeq, sequenceStatusNames, statusNames } from '../pkg/sequencer.js';

const dts = readFileSync(new URL('../src/index.d.ts', import.meta.url), 'utf8');

/** The string literals of `export type NAME = 'a' | 'b' ...;` in the declarations. */
function union(name) {
  const m = new RegExp(`export type ${name} =([^;]*);`).exec(dts);
  assert.ok(m, `index.d.ts declares ${name}`);
  return [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]);
}

/** Codes of the package's own JS, which the core cannot raise (it does not run before init). */
const PACKAGE_CODES = ['NOT_INITIALIZED'];

test('every error code of the core has an error class and a place in ErrorCode, and so do only the package\'s own codes besides', () => {
  const codes = errorCodes();
  for (const code of codes) {
    const cls = code === 'STORAGE' ? api.StorageError : api.errorClasses[code];
    assert.ok(cls, `no error class for the core's code ${code}`);
    assert.equal(cls.code, code);
  }
  for (const code of PACKAGE_CODES) {
    assert.ok(!codes.includes(code), `${code} is the core's now: drop it from PACKAGE_CODES`);
    assert.equal(api.errorClasses[code]?.code, code);
  }
  for (const code of Object.keys(api.errorClasses)) {
    assert.ok(codes.includes(code) || PACKAGE_CODES.includes(code), `${code} is neither the core's nor the package's`);
  }
  assert.deepEqual([...union('ErrorCode')].sort(), [...codes, ...PACKAGE_CODES].sort());
});

test('the status names are the core\'s, and the declarations list the same', () => {
  assert.deepEqual(union('SequencerStatus'), statusNames());
  assert.deepEqual(union('SequenceStatus'), sequenceStatusNames());
});

test('the facade\'s constants and record kinds are the core\'s', () => {
  const js = [
    api.SYSTEM_KIND,
    api.SEQ_WLOG_OFFSET,
    api.SEQ_REC_ID,
    api.SEQ_CREC_ID,
    api.FIRST_WLOG_OFFSET,
    api.REGISTER_FACTOR,
    api.FIRST_USER_BASE_RECORD_ID,
    api.FIRST_REC_ID,
    api.FIRST_CREC_ID,
  ];
  assert.deepEqual(js, Array.from(facadeConstants()));
  const kinds = union('RecordKind');
  assert.deepEqual(kinds.map(recordSeq), [3, 3, 2, 2, 2, 2]);
  assert.equal(recordSeq('Invoice'), -1);
});
