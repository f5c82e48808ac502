/**
 * The batched calls through the wasm core's shell: one call per event (`startNext`,
 * `flushStartNext`) and one call per batch of events (`startBatch`, `flushStartBatch`).
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStorage, Sequencer, UnknownSeqIdError, NoTransactionError, StorageError } from 'plog-sequencer';
import { rejectsWith } from './helpers.js';

const KIND = 1;
const params = (extra = {}) => ({ seqTypes: { [KIND]: { 1: 1, 2: 10, 3: 100 } }, retryDelayMs: 1, ...extra });

/** Appends the started events of a batch to the PLog with their numbers. */
function append(storage, batch, wsList, seqs) {
  for (let i = 0; i < batch.started; i++) {
    const values = seqs.map((seq, j) => ({ ws: wsList[i], seq, value: batch.numbers[i * seqs.length + j] }));
    storage.append(batch.firstOffset + i, values);
  }
}

for (const mode of [{ name: 'sync', async: false }, { name: 'async', async: true }]) {
  test(`a batch reads its cold workspaces together, stages its events, and flushStartBatch completes them (${mode.name} storage)`, async () => {
    const storage = new MemoryStorage({ async: mode.async });
    storage.seedEvent(1, [{ ws: 5, seq: 1, value: 41 }]);
    const s = await Sequencer.open({ params: params(), storage });
    const wsList = [5, 6, 7];
    const first = await s.startBatch(KIND, wsList, [1, 3]);
    assert.equal(first.started, 3);
    assert.equal(first.firstOffset, 2);
    assert.equal(first.notNowReason, null);
    assert.deepEqual(Array.from(first.numbers), [42, 100, 1, 100, 1, 100]);
    assert.equal(storage.manyReads, 1, 'one read for the cold workspaces 6 and 7 (5 was replayed)');
    assert.equal(s.status, 'in-transaction');
    append(storage, first, wsList, [1, 3]);

    const second = await s.flushStartBatch(KIND, [5, 8], [1]);
    assert.equal(second.started, 2);
    assert.equal(second.firstOffset, 5);
    assert.deepEqual(Array.from(second.numbers), [43, 1]);
    append(storage, second, [5, 8], [1]);
    s.flush();
    await s.whenFlushed();
    assert.equal(storage.number(5, 1), 43);
    assert.equal(storage.number(7, 3), 100);
    assert.equal(storage.nextOffset, 6);
    s.close();
  });
}

test('a batch without readNumbersMany reads each cold workspace with readNumbers', async () => {
  const storage = new MemoryStorage();
  storage.readNumbersMany = undefined;
  let reads = 0;
  const real = storage.readNumbers.bind(storage);
  storage.readNumbers = (ws, seqs) => {
    reads++;
    return real(ws, seqs);
  };
  const s = await Sequencer.open({ params: params(), storage });
  const batch = await s.startBatch(KIND, [1, 2, 3, 2], [2]);
  assert.equal(batch.started, 4);
  assert.deepEqual(Array.from(batch.numbers), [10, 10, 10, 11]);
  assert.equal(reads, 3);
  s.close();
});

test('a batch stops at "not now": during actualization nothing starts, past the unflushed limit the rest waits', async () => {
  const storage = new MemoryStorage();
  const s = new Sequencer({ params: params({ maxUnflushedValues: 2 }), storage });
  const none = await s.startBatch(KIND, [1, 2], [1]);
  assert.deepEqual([none.started, none.notNowReason], [0, 'actualizing']);
  await s.whenReady();
  storage.holdWrites = true;
  const full = await s.startBatch(KIND, [1, 2, 3, 4], [1]);
  assert.equal(full.notNowReason, 'too-many-unflushed');
  assert.equal(full.started, 3, 'three staged values, then more than two: the fourth waits');
  append(storage, full, [1, 2, 3, 4], [1]);
  s.flush();
  storage.holdWrites = false;
  storage.releaseWrites();
  await s.whenFlushed();
  const rest = await s.startBatch(KIND, [4], [1]);
  assert.deepEqual([rest.started, rest.firstOffset, rest.notNowReason], [1, 4, null]);
  s.close();
});

test('refusals: an unknown sequence changes nothing; flushStartBatch without a transaction does nothing', async () => {
  const s = await Sequencer.open({ params: params(), storage: new MemoryStorage() });
  await rejectsWith(() => s.startBatch(KIND, [1, 2], [1, 77]), UnknownSeqIdError);
  assert.equal(s.status, 'ready');
  await rejectsWith(() => s.flushStartBatch(KIND, [1], [1]), NoTransactionError);
  assert.equal(s.status, 'ready');
  s.close();
});

test('a failing readNumbersMany rejects with StorageError and changes nothing; the next batch reads again', async () => {
  const storage = new MemoryStorage({ async: true });
  const s = await Sequencer.open({ params: params(), storage });
  storage.failNumberReads = 1;
  const e = await rejectsWith(() => s.startBatch(KIND, [1, 2], [1]), StorageError);
  assert.equal(e.op, 'readNumbersMany');
  assert.equal(s.status, 'ready');
  const batch = await s.startBatch(KIND, [1, 2], [1]);
  assert.equal(batch.started, 2);
  s.close();
});

test('startNext and flushStartNext: one call per event; a refused next drops the transaction', async () => {
  const storage = new MemoryStorage();
  const s = await Sequencer.open({ params: params(), storage });
  const out = new Float64Array(3);
  assert.equal(await s.startNext(KIND, 9, [1, 2, 3], out), 1);
  assert.deepEqual(Array.from(out), [1, 10, 100]);
  storage.append(1, [{ ws: 9, seq: 1, value: 1 }, { ws: 9, seq: 2, value: 10 }, { ws: 9, seq: 3, value: 100 }]);
  assert.equal(await s.flushStartNext(KIND, 9, [2], out), 2);
  assert.equal(out[0], 11);
  await rejectsWith(() => s.flushStartNext(KIND, 9, [1, 77], out), UnknownSeqIdError);
  assert.equal(s.status, 'actualizing', 'the refused next dropped the transaction');
  await s.whenReady();
  assert.equal(await s.startNext(KIND, 9, [2], out), 2, 'event 2 never reached the PLog');
  assert.equal(out[0], 11);
  s.close();
});
