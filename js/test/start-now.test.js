/**
 * `startNow`: a start that completes within the call when it can (numbers in memory, or a
 * storage that answers synchronously), and otherwise hands back `start`'s promise; one read
 * per cold workspace either way, and its failures leave nothing behind.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStorage, StorageError, TransactionInProgressError } from 'plog-sequencer';
import { KIND, SEQ, WS, openCountingReads, rejectsWith } from './helpers.js';

const open = (storage) => openCountingReads(storage);

test('startNow begins a cold workspace in the call when storage reads synchronously', async () => {
  const storage = new MemoryStorage();
  storage.numbers.set(WS, new Map([[SEQ, 41]]));
  const { s, reads } = await open(storage);
  const o = s.startNow(KIND, WS);
  assert.equal(o, 1, 'a number, not a promise');
  assert.equal(s.notNowReason, null);
  assert.deepEqual(reads, [[WS, [SEQ]]]);
  assert.equal(s.next(SEQ), 42);
  s.flush();
  // Warm now: a number again, no read.
  assert.equal(s.startNow(KIND, WS), 2);
  assert.equal(reads.length, 1);
  assert.equal(s.next(SEQ), 43);
  s.flush();
  s.close();
});

test('startNow hands back a promise when storage reads asynchronously, and reads once', async () => {
  const { s, reads } = await open(new MemoryStorage({ async: true }));
  const o = s.startNow(KIND, WS);
  assert.ok(o instanceof Promise);
  assert.throws(() => s.startNow(KIND, WS), TransactionInProgressError);
  assert.equal(await o, 1);
  assert.equal(reads.length, 1);
  assert.equal(s.next(SEQ), 1);
  s.flush();
  assert.equal(s.startNow(KIND, WS), 2, 'warm: in the call');
  s.flush();
  s.close();
});

test('startNow performs the read tryStart asked for, once', async () => {
  const { s, reads } = await open(new MemoryStorage());
  assert.equal(s.tryStart(KIND, WS), 0);
  assert.equal(s.notNowReason, 'needs-load');
  assert.equal(s.startNow(KIND, WS), 1);
  assert.deepEqual(reads, [[WS, [SEQ]]]);
  s.flush();
  s.close();
});

test('startNow says "not now" in the call while the sequencer actualizes', async () => {
  const { s, reads } = await open(new MemoryStorage());
  s.actualize();
  assert.equal(s.startNow(KIND, WS), 0);
  assert.equal(s.notNowReason, 'actualizing');
  assert.equal(reads.length, 0);
  await s.whenReady();
  assert.equal(s.startNow(KIND, WS), 1);
  s.flush();
  s.close();
});

test('a synchronous read that throws: startNow throws STORAGE, nothing begins, the next start reads again', async () => {
  const storage = new MemoryStorage();
  const { s, reads } = await open(storage);
  storage.failNumberReads = 1;
  const e = await rejectsWith(() => s.startNow(KIND, WS), StorageError);
  assert.equal(e.op, 'readNumbers');
  assert.equal(s.status, 'ready');
  assert.equal(s.startNow(KIND, WS), 1);
  assert.equal(reads.length, 2);
  assert.equal(s.next(SEQ), 1);
  s.flush();
  s.close();
});
