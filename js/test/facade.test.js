/**
 * The ISequence facade, docs/DESIGN.md §5 (`EventSequencer`, `systemParams`, `eventValues`): the
 * command processor's flows (start → ids → finish / cancel), waiting for recovery on a manual
 * clock, the status transitions, recovery of the next ids from a platform PLog, and misuse.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CleanedUpError,
  EventSequencer,
  FIRST_CREC_ID,
  FIRST_REC_ID,
  FIRST_WLOG_OFFSET,
  InvalidArgumentError,
  InvalidParamsError,
  MemoryStorage,
  NoTransactionError,
  SEQ_CREC_ID,
  SEQ_REC_ID,
  SEQ_WLOG_OFFSET,
  SYSTEM_KIND,
  Sequencer,
  TransactionInProgressError,
  eventValues,
  systemParams,
} from 'plog-sequencer';
import { rejectsWith, watchUnhandledRejections } from './helpers.js';

/** A clock that moves only when told, with timers on its own time. */
class ManualClock {
  t = 0;
  /** How often `now()` was read. */
  reads = 0;
  /** @type {Set<{ at: number, fn: () => void }>} */
  timers = new Set();
  now() {
    this.reads++;
    return this.t;
  }
  setTimeout(fn, ms) {
    const timer = { at: this.t + ms, fn };
    this.timers.add(timer);
    return timer;
  }
  clearTimeout(timer) {
    this.timers.delete(timer);
  }
  /** Moves time on by `ms` and runs the timers that came due, earliest first. */
  advance(ms) {
    this.t += ms;
    for (const timer of [...this.timers].sort((a, b) => a.at - b.at)) {
      if (timer.at <= this.t && this.timers.delete(timer)) timer.fn();
    }
  }
}

/**
 * `storage` whose recovery reads (the next offset and the PLog) wait until `release()`: the
 * sequencer stays in `'recover'` as long as the test wants.
 * @param {MemoryStorage} storage
 */
function heldRecovery(storage = new MemoryStorage()) {
  /** @type {() => void} */
  let release = () => {};
  const gate = new Promise((resolve) => (release = resolve));
  return {
    storage: {
      readNumbers: (ws, seqs) => storage.readNumbers(ws, seqs),
      readNextOffset: async () => (await gate, storage.readNextOffset()),
      readPlog: async (from, max) => (await gate, storage.readPlog(from, max)),
      write: (values, nextOffset) => storage.write(values, nextOffset),
    },
    release,
  };
}

/** Lets pending promise jobs and macrotasks (the driver's pump) run. */
async function settle(turns = 5) {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Tracks a promise: `state.done` / `state.value` once it settles. */
function track(promise) {
  const state = { done: false, value: undefined };
  promise.then((value) => Object.assign(state, { done: true, value }));
  return state;
}

test('the constants are those of the Rust facade, and the first ids are safe integers', () => {
  assert.deepEqual(
    [SYSTEM_KIND, SEQ_WLOG_OFFSET, SEQ_REC_ID, SEQ_CREC_ID, FIRST_WLOG_OFFSET, FIRST_REC_ID, FIRST_CREC_ID],
    [0, 1, 2, 3, 1, 322680000131072, 322685000131072],
  );
  assert.ok(Number.isSafeInteger(FIRST_REC_ID) && Number.isSafeInteger(FIRST_CREC_ID));
});

test('systemParams adds the system kind and keeps other kinds and the limits, for objects and Maps', () => {
  const system = { 1: 1, 2: FIRST_REC_ID, 3: FIRST_CREC_ID };
  assert.deepEqual(systemParams(), { seqTypes: { 0: system } });
  const given = { seqTypes: { 7: { 1: 5 }, 0: { 9: 40, 2: 3 } }, maxUnflushedValues: 9, retryDelayMs: 2 };
  assert.deepEqual(systemParams(given), {
    seqTypes: { 7: { 1: 5 }, 0: { 9: 40, ...system } },
    maxUnflushedValues: 9,
    retryDelayMs: 2,
  });
  assert.deepEqual(given.seqTypes[0], { 9: 40, 2: 3 }, 'the input is not changed');

  const fromMap = systemParams({ seqTypes: new Map([[7, new Map([[1, 5]])]]), lruCacheSize: 10 });
  assert.ok(fromMap.seqTypes instanceof Map);
  assert.deepEqual([...fromMap.seqTypes.get(0)], [[1, 1], [2, FIRST_REC_ID], [3, FIRST_CREC_ID]]);
  assert.deepEqual([...fromMap.seqTypes.get(7)], [[1, 5]]);
  assert.equal(fromMap.lruCacheSize, 10);

  // The result is accepted by the driver as is.
  new Sequencer({ params: systemParams(given), storage: new MemoryStorage() }).close();
  assert.throws(() => systemParams({ seqTypes: 'nope' }), InvalidParamsError);
  assert.throws(() => systemParams(null), InvalidParamsError);
});

test('start → ids → finish: the platform\'s first values, then one more each', async () => {
  const storage = new MemoryStorage();
  const s = await EventSequencer.open({ storage });
  const first = await s.startEvent(1000, 140);
  assert.deepEqual(first, { plogOffset: 1, wlogOffset: 1 });
  assert.equal(s.status, 'eventing');
  assert.equal(s.nextRecId(), 322680000131072);
  assert.equal(s.nextRecId(), 322680000131073);
  assert.equal(s.nextCRecId(), 322685000131072);
  storage.append(first.plogOffset, eventValues({ ws: 140, wlogOffset: first.wlogOffset }));
  s.finishEvent();
  assert.equal(s.status, 'ready');

  const second = await s.startEvent(1000, 140);
  assert.deepEqual(second, { plogOffset: 2, wlogOffset: 2 });
  assert.equal(s.nextRecId(), 322680000131074);
  assert.equal(s.nextCRecId(), 322685000131073);
  await rejectsWith(() => s.startEvent(1000, 141), TransactionInProgressError);
  assert.equal(s.nextRecId(), 322680000131075, 'the refused start changed nothing');
  storage.append(second.plogOffset, eventValues({ ws: 140, wlogOffset: second.wlogOffset }));
  s.finishEvent();

  // Another workspace has its own WLog and ids; the PLog offset is the partition's.
  assert.deepEqual(await s.startEvent(0, 141), { plogOffset: 3, wlogOffset: 1 });
  assert.equal(s.nextRecId(), FIRST_REC_ID);
  assert.equal(s.nextCRecId(), FIRST_CREC_ID);
  s.finishEvent();

  await s.whenFlushed();
  assert.equal(storage.number(140, SEQ_WLOG_OFFSET), 2);
  assert.equal(storage.number(140, SEQ_REC_ID), FIRST_REC_ID + 3);
  assert.equal(storage.number(140, SEQ_CREC_ID), FIRST_CREC_ID + 1);
  assert.equal(storage.number(141, SEQ_CREC_ID), FIRST_CREC_ID);
  s.close();
});

test('start → ids → cancel: recovery, then the same offsets and ids again', async () => {
  const s = await EventSequencer.open({ storage: new MemoryStorage({ async: true }) });
  const first = await s.startEvent(1000, 7);
  const ids = [s.nextRecId(), s.nextCRecId(), s.nextRecId()];
  assert.deepEqual(ids, [FIRST_REC_ID, FIRST_CREC_ID, FIRST_REC_ID + 1]);
  s.cancelEvent();
  assert.equal(s.status, 'recover');
  assert.deepEqual(await s.startEvent(1000, 7), first, 'startEvent waits out the recovery');
  assert.deepEqual([s.nextRecId(), s.nextCRecId(), s.nextRecId()], ids);
  s.close();
});

test('start during recovery waits on the clock without polling, and succeeds once recovery ends', async () => {
  const unhandled = watchUnhandledRejections();
  const clock = new ManualClock();
  const held = heldRecovery();
  const s = new EventSequencer({ storage: held.storage, clock });
  assert.equal(s.status, 'recover');
  const started = track(s.startEvent(10_000, 7));
  await settle();
  assert.equal(started.done, false);
  assert.equal(clock.timers.size, 1, 'one timer, at the deadline');
  assert.equal([...clock.timers][0].at, 10_000);

  const reads = clock.reads;
  await settle(20);
  assert.equal(clock.reads, reads, 'nothing polls the clock while waiting');
  clock.advance(9_999);
  await settle();
  assert.equal(started.done, false, 'still within the wait');

  held.release();
  await settle();
  assert.equal(started.done, true);
  assert.deepEqual(started.value, { plogOffset: 1, wlogOffset: 1 });
  assert.equal(s.status, 'eventing');
  assert.equal(clock.timers.size, 0, 'the timer is cleared');
  s.close();
  unhandled.check();
});

test('start during recovery resolves to null once the wait is over, and later succeeds', async () => {
  const clock = new ManualClock();
  const held = heldRecovery();
  const s = new EventSequencer({ storage: held.storage, clock });
  assert.equal(await s.startEvent(0, 7), null, 'no wait: "not now" at once');

  const started = track(s.startEvent(100, 7));
  await settle();
  clock.advance(99);
  await settle();
  assert.equal(started.done, false);
  clock.advance(1);
  await settle();
  assert.equal(started.done, true);
  assert.equal(started.value, null);
  assert.equal(s.status, 'recover', 'still recovering, nothing began');
  assert.equal(clock.timers.size, 0);
  await rejectsWith(() => s.nextRecId(), NoTransactionError);

  held.release();
  await s.whenReady();
  assert.equal(s.status, 'ready');
  assert.deepEqual(await s.startEvent(0, 7), { plogOffset: 1, wlogOffset: 1 });
  s.close();
});

test('with the default clock the wait uses real timers: a short wait during recovery gives null', async () => {
  const held = heldRecovery();
  const s = new EventSequencer({ storage: held.storage });
  assert.equal(await s.startEvent(5, 7), null);
  const waiting = s.startEvent(60_000, 7);
  held.release();
  assert.deepEqual(await waiting, { plogOffset: 1, wlogOffset: 1 }, 'a long wait ends with the recovery');
  s.close();
});

test('closing while startEvent waits resolves it to null; later calls throw CLEANED_UP', async () => {
  const unhandled = watchUnhandledRejections();
  const clock = new ManualClock();
  const s = new EventSequencer({ storage: heldRecovery().storage, clock });
  const started = s.startEvent(10_000, 7);
  await settle();
  s.close();
  assert.equal(await started, null);
  assert.equal(s.status, 'finished');
  assert.equal(clock.timers.size, 0);
  await rejectsWith(() => s.startEvent(0, 7), CleanedUpError);
  await rejectsWith(() => s.nextRecId(), CleanedUpError);
  await rejectsWith(() => s.nextCRecId(), CleanedUpError);
  await rejectsWith(() => s.finishEvent(), CleanedUpError);
  await rejectsWith(() => s.cancelEvent(), CleanedUpError);
  s.close(); // idempotent
  unhandled.check();
});

test('status: recover → ready → eventing → ready (finish) → eventing → recover (cancel) → ready → finished (close)', async () => {
  const held = heldRecovery(new MemoryStorage({ async: true }));
  const s = new EventSequencer({ storage: held.storage, clock: new ManualClock() });
  const seen = [s.status];
  held.release();
  await s.whenReady();
  seen.push(s.status);
  await s.startEvent(0, 1);
  seen.push(s.status);
  s.nextRecId();
  s.finishEvent();
  seen.push(s.status);
  await s.startEvent(0, 1);
  seen.push(s.status);
  s.cancelEvent();
  seen.push(s.status);
  await s.whenReady();
  seen.push(s.status);
  s.close();
  seen.push(s.status);
  assert.deepEqual(seen, ['recover', 'ready', 'eventing', 'ready', 'eventing', 'recover', 'ready', 'finished']);
});

test('too many unflushed values: startEvent waits for the flusher within its wait', async () => {
  const storage = new MemoryStorage();
  const clock = new ManualClock();
  const s = await EventSequencer.open({ storage, clock, params: { maxUnflushedValues: 3 } });
  storage.holdWrites = true;
  // One event per workspace: each leaves a value of its own waiting behind the held write.
  let started;
  let events = 0;
  while (events < 50 && (started = await s.startEvent(0, 100 + events)) !== null) {
    storage.append(started.plogOffset, eventValues({ ws: 100 + events, wlogOffset: started.wlogOffset }));
    s.finishEvent();
    events++;
    await settle();
  }
  assert.equal(started, null, 'the held writes filled the unflushed values');
  assert.equal(s.sequencer.notNowReason, 'too-many-unflushed');
  assert.equal(s.status, 'ready');
  const waiting = track(s.startEvent(1_000, 9));
  await settle();
  assert.equal(waiting.done, false);
  storage.holdWrites = false;
  storage.releaseWrites();
  await settle(10);
  assert.equal(waiting.done, true);
  assert.deepEqual(waiting.value, { plogOffset: events + 1, wlogOffset: 1 });
  assert.equal(clock.timers.size, 0);
  s.close();
});

test('eventValues: the WLog offset, C records → CREC, O/W records → REC, the whole argument tree → REC', () => {
  const values = eventValues({
    ws: 5,
    wlogOffset: 2,
    newRecords: [
      { kind: 'CDoc', id: 10 },
      { kind: 'CRecord', id: 11 },
      { kind: 'ODoc', id: 12 },
      { kind: 'ORecord', id: 13 },
      { kind: 'WDoc', id: 14 },
      { kind: 'WRecord', id: 15 },
    ],
    argument: { id: 20, children: [{ id: 21, children: [{ id: 23 }] }, { id: 22, children: [] }] },
  });
  assert.deepEqual(values, [
    { ws: 5, seq: SEQ_WLOG_OFFSET, value: 2 },
    { ws: 5, seq: SEQ_CREC_ID, value: 10 },
    { ws: 5, seq: SEQ_CREC_ID, value: 11 },
    { ws: 5, seq: SEQ_REC_ID, value: 12 },
    { ws: 5, seq: SEQ_REC_ID, value: 13 },
    { ws: 5, seq: SEQ_REC_ID, value: 14 },
    { ws: 5, seq: SEQ_REC_ID, value: 15 },
    { ws: 5, seq: SEQ_REC_ID, value: 20 },
    { ws: 5, seq: SEQ_REC_ID, value: 21 },
    { ws: 5, seq: SEQ_REC_ID, value: 23 },
    { ws: 5, seq: SEQ_REC_ID, value: 22 },
  ]);
  assert.deepEqual(eventValues({ ws: 1, wlogOffset: 1, newRecords: [], argument: null }), [
    { ws: 1, seq: SEQ_WLOG_OFFSET, value: 1 },
  ]);
  assert.throws(() => eventValues({ ws: 1, wlogOffset: 1, newRecords: [{ kind: 'XDoc', id: 1 }] }), InvalidArgumentError);
  assert.throws(() => eventValues({ ws: 1, wlogOffset: 1, newRecords: [{ kind: 'toString', id: 1 }] }), InvalidArgumentError);
  assert.throws(() => eventValues({ ws: 1, wlogOffset: 1, newRecords: [{ kind: 'CDoc', id: 2 ** 53 }] }), InvalidArgumentError);
  assert.throws(() => eventValues({ ws: -1, wlogOffset: 1 }), InvalidArgumentError);
  assert.throws(() => eventValues({ ws: 1, wlogOffset: 1, argument: { id: 1, children: {} } }), InvalidArgumentError);
  const loop = { id: 1, children: [] };
  loop.children.push(loop);
  assert.throws(() => eventValues({ ws: 1, wlogOffset: 1, argument: loop }), InvalidArgumentError);
});

test('recovery from a PLog of CDoc, ORecord and WRecord events with an argument tree gives the right next ids', async () => {
  const events = [
    {
      ws: 5,
      wlogOffset: 1,
      newRecords: [
        { kind: 'CDoc', id: FIRST_CREC_ID },
        { kind: 'ORecord', id: FIRST_REC_ID },
      ],
    },
    {
      ws: 5,
      wlogOffset: 2,
      newRecords: [{ kind: 'WRecord', id: FIRST_REC_ID + 1 }],
      argument: { id: FIRST_REC_ID + 2, children: [{ id: FIRST_REC_ID + 5, children: [] }, { id: FIRST_REC_ID + 3, children: [] }] },
    },
    { ws: 6, wlogOffset: 1, newRecords: [{ kind: 'CRecord', id: FIRST_CREC_ID + 9 }] },
  ];
  for (const mode of [{ name: 'sync' }, { name: 'async', async: true }]) {
    const storage = new MemoryStorage({ async: mode.async });
    events.forEach((e, i) => storage.seedEvent(i + 1, eventValues(e)));
    const s = await EventSequencer.open({ storage, plogPageSize: 2 });
    assert.deepEqual(await s.startEvent(0, 5), { plogOffset: 4, wlogOffset: 3 }, mode.name);
    assert.equal(s.nextRecId(), FIRST_REC_ID + 6, `${mode.name}: argument child +5 was the max`);
    assert.equal(s.nextCRecId(), FIRST_CREC_ID + 1, mode.name);
    s.finishEvent();
    assert.deepEqual(await s.startEvent(0, 6), { plogOffset: 5, wlogOffset: 2 }, mode.name);
    assert.equal(s.nextCRecId(), FIRST_CREC_ID + 10, mode.name);
    assert.equal(s.nextRecId(), FIRST_REC_ID, `${mode.name}: ws 6 had no O/W records yet`);
    s.close();
  }
});

test('misuse: ids, finish and cancel without an event, a bad wait, a second startEvent', async () => {
  const clock = new ManualClock();
  const held = heldRecovery();
  const s = new EventSequencer({ storage: held.storage, clock });
  await rejectsWith(() => s.nextRecId(), NoTransactionError);
  await rejectsWith(() => s.nextCRecId(), NoTransactionError);
  await rejectsWith(() => s.finishEvent(), NoTransactionError);
  await rejectsWith(() => s.cancelEvent(), NoTransactionError);
  for (const wait of [-1, NaN, '5', undefined]) {
    await rejectsWith(() => s.startEvent(wait, 1), InvalidArgumentError);
  }
  await rejectsWith(() => s.startEvent(0, -1), InvalidArgumentError);
  await rejectsWith(() => s.startEvent(0, 1.5), InvalidArgumentError);

  const waiting = s.startEvent(Infinity, 1);
  await rejectsWith(() => s.startEvent(0, 2), TransactionInProgressError);
  assert.equal(clock.timers.size, 0, 'an infinite wait arms no timer');
  held.release();
  assert.deepEqual(await waiting, { plogOffset: 1, wlogOffset: 1 });
  await rejectsWith(() => s.startEvent(0, 2), TransactionInProgressError);
  s.cancelEvent();
  await rejectsWith(() => s.cancelEvent(), NoTransactionError);
  assert.equal(s.status, 'recover', 'the refused cancel left the recovery alone');
  s.close();
  assert.throws(() => new EventSequencer({ storage: new MemoryStorage(), clock: {} }), InvalidArgumentError);
  assert.throws(() => new EventSequencer({ storage: {} }), InvalidArgumentError);
});
