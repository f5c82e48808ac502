/**
 * `start` after `tryStart` said `'needs-load'`: the numbers read the core handed out for that
 * start is performed as it is (once), reported together with the start, and its failures
 * leave nothing behind.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MalformedNumbersError, MemoryStorage, Sequencer, StorageError } from 'plog-sequencer';
import { KIND, SEQ, WS, openCountingReads, params, rejectsWith } from './helpers.js';

const SEQ2 = 2;
/** One kind with two sequences, so a read asks for both. */
const twoSeqs = () => params({ seqTypes: { [KIND]: { [SEQ]: 1, [SEQ2]: 10 } } });

/** A ready sequencer of two sequences over `storage`, and the numbers reads it makes. */
const open = (storage) => openCountingReads(storage, twoSeqs());

test('tryStart says needs-load, then start reads the workspace once and begins its transaction', async () => {
  const storage = new MemoryStorage();
  storage.numbers.set(WS, new Map([[SEQ, 4]]));
  const { s, reads } = await open(storage);
  assert.equal(s.tryStart(KIND, WS), 0);
  assert.equal(s.notNowReason, 'needs-load');
  assert.equal(reads.length, 0, 'tryStart reads nothing');
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(s.notNowReason, null);
  assert.deepEqual(reads, [[WS, [SEQ, SEQ2]]], 'one read, of both sequences');
  assert.equal(s.next(SEQ), 5);
  assert.equal(s.next(SEQ2), 10);
  s.flush();
  // Warm now: no read.
  assert.equal(s.tryStart(KIND, WS), 2);
  assert.equal(reads.length, 1);
  s.flush();
  s.close();
});

test('start of another workspace than the one tryStart asked a read for reads that other one', async () => {
  const { s, reads } = await open(new MemoryStorage());
  assert.equal(s.tryStart(KIND, WS), 0);
  assert.equal(await s.start(KIND, WS + 1), 1);
  assert.deepEqual(reads, [[WS + 1, [SEQ, SEQ2]]]);
  s.flush();
  assert.equal(await s.start(KIND, WS), 2);
  assert.deepEqual(reads[1], [WS, [SEQ, SEQ2]]);
  s.flush();
  s.close();
});

test('tryStart says needs-load, then an asynchronous read: start waits for it, once', async () => {
  const { s, reads } = await open(new MemoryStorage({ async: true }));
  assert.equal(s.tryStart(KIND, WS), 0);
  const started = s.start(KIND, WS);
  assert.throws(() => s.tryStart(KIND, WS), /a start is waiting for storage/);
  assert.equal(await started, 1);
  assert.equal(reads.length, 1);
  assert.equal(s.next(SEQ), 1);
  s.flush();
  s.close();
});

test('actualize while the read tryStart asked for is performed: start resolves to "not now", then reads again', async () => {
  const { s, reads } = await open(new MemoryStorage({ async: true }));
  assert.equal(s.tryStart(KIND, WS), 0);
  const started = s.start(KIND, WS);
  s.actualize();
  assert.equal(await started, 0);
  assert.equal(s.notNowReason, 'actualizing');
  await s.whenReady();
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(reads.length, 2, 'the dropped read is not reused');
  s.flush();
  s.close();
});

test('the read tryStart asked for fails: start rejects with STORAGE, and the next start reads again', async () => {
  const storage = new MemoryStorage();
  const { s, reads } = await open(storage);
  assert.equal(s.tryStart(KIND, WS), 0);
  storage.failNumberReads = 1;
  const e = await rejectsWith(() => s.start(KIND, WS), StorageError);
  assert.equal(e.op, 'readNumbers');
  assert.equal(s.status, 'ready');
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(reads.length, 2);
  s.flush();
  s.close();
});

test('the read tryStart asked for answers the wrong count: MALFORMED_NUMBERS, nothing begins, the next start reads again', async () => {
  const storage = new MemoryStorage();
  const { s } = await open(storage);
  const real = storage.readNumbers;
  assert.equal(s.tryStart(KIND, WS), 0);
  storage.readNumbers = () => [7];
  await rejectsWith(() => s.start(KIND, WS), MalformedNumbersError);
  assert.equal(s.status, 'ready');
  storage.readNumbers = real;
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(s.next(SEQ), 1);
  s.flush();
  s.close();
});

test('the pending read is found in place after the wasm memory grew', async () => {
  const { wasmMemory } = await import('../pkg/sequencer.js');
  const storage = new MemoryStorage();
  storage.numbers.set(WS + 1, new Map([[SEQ, 6]]));
  const { s, reads } = await open(storage);
  assert.equal(s.tryStart(KIND, WS), 0);
  assert.equal(await s.start(KIND, WS), 1); // the driver's view of the memory is made
  s.flush();
  const before = wasmMemory().buffer.byteLength;
  const others = [];
  while (wasmMemory().buffer.byteLength === before) {
    others.push(new Sequencer({ params: twoSeqs(), storage: new MemoryStorage() }));
  }
  assert.equal(s.tryStart(KIND, WS + 1), 0);
  assert.equal(await s.start(KIND, WS + 1), 2);
  assert.deepEqual(reads[1], [WS + 1, [SEQ, SEQ2]]);
  assert.equal(s.next(SEQ), 7);
  s.flush();
  for (const o of others) o.close();
  s.close();
});
