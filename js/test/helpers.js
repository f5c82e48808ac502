/**
 * Shared test helpers: params, a seeded random generator and error assertions.
 */

import assert from 'node:assert/strict';
import { Sequencer, SequencerError } from 'plog-sequencer';

export const KIND = 1;
export const SEQ = 1;
export const WS = 1000;

/** Params with one kind and one sequence starting at 1, retries every millisecond. */
export function params(extra = {}) {
  return { seqTypes: { [KIND]: { [SEQ]: 1 } }, retryDelayMs: 1, maxRetryDelayMs: 4, ...extra };
}

/**
 * A seeded pseudo-random generator (mulberry32): the same seed gives the same sequence.
 * @param {number} seed
 */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Asserts that `fn()` throws (or rejects with) a `SequencerError` of class `cls` and its code.
 * @param {() => unknown} fn
 * @param {{ code: string }} cls
 */
export async function rejectsWith(fn, cls) {
  let caught;
  try {
    await fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught, `expected ${cls.code}, nothing was thrown`);
  assert.ok(caught instanceof cls, `expected ${cls.code}, got ${caught}`);
  assert.ok(caught instanceof SequencerError);
  assert.ok(caught instanceof Error);
  assert.equal(caught.code, cls.code);
  assert.equal(typeof caught.message, 'string');
  return caught;
}

/**
 * Starts a transaction, waiting out "not now" (actualization or too many unflushed values).
 * @param {import('plog-sequencer').Sequencer} s
 */
export async function startWhenPossible(s, kind, ws) {
  for (;;) {
    const offset = await s.start(kind, ws);
    if (offset > 0) return offset;
    if (s.notNowReason === 'actualizing') await s.whenReady();
    else await s.whenFlushed();
  }
}

/** Records unhandled rejections of this process; `check()` asserts there were none. */
export function watchUnhandledRejections() {
  const seen = [];
  const onRejection = (reason) => seen.push(reason);
  process.on('unhandledRejection', onRejection);
  return {
    check() {
      process.off('unhandledRejection', onRejection);
      assert.deepEqual(seen, [], 'no storage failure may become an unhandled rejection');
    },
  };
}

/**
 * A ready sequencer over `storage` with params `p`, and the numbers reads it makes
 * (`[ws, seqs]`, in order).
 * @param {import('plog-sequencer').SeqStorage} storage
 */
export async function openCountingReads(storage, p = params()) {
  const reads = [];
  const real = storage.readNumbers.bind(storage);
  storage.readNumbers = (ws, seqs) => {
    reads.push([ws, [...seqs]]);
    return real(ws, seqs);
  };
  const s = await Sequencer.open({ params: p, storage });
  return { s, reads };
}
