/**
 * Several events in one transaction (`stage()`): numbered together, appended to the PLog
 * together, completed by one `flush()` or dropped by `actualize()`.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStorage, NoTransactionError, Sequencer } from 'plog-sequencer';
import { KIND, SEQ, params, rejectsWith } from './helpers.js';

test('staged events take consecutive offsets and reach storage only after flush', async () => {
  const storage = new MemoryStorage();
  const s = await Sequencer.open({ params: params(), storage });
  assert.equal(await s.start(KIND, 7), 1);
  assert.equal(s.next(SEQ), 1);
  s.stage();
  assert.equal(s.status, 'in-transaction');
  assert.equal(await s.start(KIND, 8), 2);
  assert.equal(s.next(SEQ), 1);
  s.stage();
  assert.equal(await s.start(KIND, 7), 3);
  assert.equal(s.next(SEQ), 2, 'ws 7 continues after its staged number');
  s.stage();
  await s.whenFlushed();
  assert.equal(storage.numbers.size, 0, 'nothing staged is written before flush');

  storage.append(1, [{ ws: 7, seq: SEQ, value: 1 }]);
  storage.append(2, [{ ws: 8, seq: SEQ, value: 1 }]);
  storage.append(3, [{ ws: 7, seq: SEQ, value: 2 }]);
  s.flush();
  await s.whenFlushed();
  assert.equal(s.status, 'ready');
  assert.deepEqual(Array.from(await storage.readNumbers(7, [SEQ])), [2]);
  assert.deepEqual(Array.from(await storage.readNumbers(8, [SEQ])), [1]);
  assert.equal(storage.offsetAheadOfValues(), null);
  s.close();
});

test('actualize drops staged events and hands their offsets and numbers out again', async () => {
  const s = await Sequencer.open({ params: params(), storage: new MemoryStorage() });
  assert.equal(await s.start(KIND, 7), 1);
  s.next(SEQ);
  s.stage();
  s.actualize();
  await s.whenReady();
  assert.equal(await s.start(KIND, 7), 1);
  assert.equal(s.next(SEQ), 1);
  s.close();
});

test('stage without an open event is refused and leaves staged events alone', async () => {
  const s = await Sequencer.open({ params: params(), storage: new MemoryStorage() });
  await rejectsWith(() => s.stage(), NoTransactionError);
  assert.equal(await s.start(KIND, 7), 1);
  s.stage();
  await rejectsWith(() => s.stage(), NoTransactionError);
  assert.equal(s.heldNumbers.transaction, 0, 'the event took no number');
  s.flush();
  await rejectsWith(() => s.flush(), NoTransactionError);
  s.close();
});
