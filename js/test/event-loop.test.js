/**
 * The flusher and the actualizer on the event loop: async storage with random delays, a write
 * in flight not blocking transactions, storage errors retried, and close stopping everything.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStorage, Sequencer, StorageError } from 'plog-sequencer';
import { KIND, SEQ, WS, params, rng, startWhenPossible, watchUnhandledRejections } from './helpers.js';

/** Two kinds, three sequences, small limits so that replay and "not now" paths run too. */
const busyParams = {
  seqTypes: { 1: { 1: 1, 2: 100 }, 2: { 1: 1000 } },
  maxUnflushedValues: 4,
  lruCacheSize: 3,
  retryDelayMs: 1,
  maxRetryDelayMs: 8,
};

/**
 * Runs `count` commands chosen by `random`: each appends its event to the PLog and flushes, or
 * (sometimes) fails and actualizes. Returns every number of every committed event by key.
 */
async function runCommands(s, storage, random, count) {
  const issued = new Map();
  let lastOffset = 0;
  for (let i = 0; i < count; i++) {
    const kind = random() < 0.7 ? 1 : 2;
    const ws = 1 + Math.floor(random() * 5);
    const offset = await startWhenPossible(s, kind, ws);
    assert.equal(offset, storage.plogNext(), 'start hands out the PLog offset the event goes at');
    const seqs = kind === 1 ? [1, 2, 1] : [1];
    const values = seqs.map((seq) => ({ ws, seq, value: s.next(seq) }));
    if (random() < 0.05) {
      s.actualize(); // the command failed: nothing of it is kept
      continue;
    }
    storage.append(offset, values);
    s.flush();
    lastOffset = offset;
    for (const v of values) {
      const key = `${kind}/${v.ws}/${v.seq}`;
      if (!issued.has(key)) issued.set(key, []);
      issued.get(key).push(v.value);
    }
    if (random() < 0.3) await new Promise((r) => setTimeout(r, random() * 2));
  }
  return { issued, lastOffset };
}

test('an all-async storage with random delays: many transactions, no number reused, and a restart continues after them', async () => {
  const unhandled = watchUnhandledRejections();
  const random = rng(20240501);
  const storage = new MemoryStorage({ delay: () => random() * 3 });
  const errors = [];
  const s = new Sequencer({ params: busyParams, storage, plogPageSize: 3, onError: (e) => errors.push(e) });
  const { issued, lastOffset } = await runCommands(s, storage, random, 600);
  await s.whenFlushed();
  s.close();

  for (const [key, values] of issued) {
    const sorted = [...values].sort((a, b) => a - b);
    assert.deepEqual(values, sorted, `${key}: numbers only grow`);
    assert.equal(new Set(values).size, values.length, `${key}: no number is reused`);
  }
  assert.equal(storage.offsetAheadOfValues(), null, 'values are stored before the offset');
  assert.equal(storage.nextOffset, lastOffset);
  assert.ok(storage.plogNext() > 500, `most of the 600 commands committed (${storage.plogNext() - 1})`);
  assert.deepEqual(errors, []);

  // A new sequencer over the same storage continues after every committed number.
  const again = await Sequencer.open({ params: busyParams, storage });
  const { issued: later } = await runCommands(again, storage, rng(99), 100);
  for (const [key, values] of later) {
    const before = issued.get(key) ?? [];
    assert.ok(values[0] > Math.max(0, ...before), `${key}: continues after ${Math.max(...before)}`);
  }
  await again.whenFlushed();
  again.close();
  unhandled.check();
});

test('a flush in flight does not block transactions: 1000 transactions complete while the write is held', async () => {
  const storage = new MemoryStorage();
  const s = await Sequencer.open({ params: params(), storage });
  storage.holdWrites = true;
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(s.next(SEQ), 1);
  s.flush();
  await storage.waitFor(() => storage.heldWrites === 1); // the gate: the write is in flight

  let offset = 1;
  let number = 1;
  for (let i = 0; i < 1000; i++) {
    const o = i % 2 === 0 ? s.tryStart(KIND, WS) : await s.start(KIND, WS);
    assert.equal(o, ++offset, 'start is not held back by the write');
    assert.equal(s.next(SEQ), ++number);
    s.flush();
  }
  assert.equal(storage.heldWrites, 1, 'one write at a time');
  assert.equal(storage.writes, 0);

  storage.holdWrites = false;
  storage.releaseWrites();
  await s.whenFlushed();
  assert.equal(storage.number(WS, SEQ), number);
  assert.equal(storage.nextOffset, offset);
  assert.ok(storage.writes <= 3, `values batched while the write was held (${storage.writes} writes)`);
  s.close();
});

test('storage write errors are retried with backoff and nothing is lost', async () => {
  const unhandled = watchUnhandledRejections();
  const storage = new MemoryStorage({ async: true });
  const errors = [];
  const s = await Sequencer.open({ params: params(), storage, onError: (e) => errors.push(e) });
  storage.failWrites = 3;
  let last = 0;
  let offset = 0;
  for (let i = 0; i < 20; i++) {
    offset = await s.start(KIND, WS);
    last = s.next(SEQ);
    s.flush();
    await Promise.resolve();
  }
  await s.whenFlushed();
  assert.deepEqual(errors.map((e) => [e.code, e.op]), Array(3).fill(['STORAGE', 'write']));
  assert.ok(errors[0] instanceof StorageError);
  assert.equal(errors[0].cause.code, 'INJECTED_FAULT');
  assert.equal(storage.number(WS, SEQ), last);
  assert.equal(storage.nextOffset, offset);
  s.close();
  unhandled.check();
});

test('storage read errors during actualization are retried until it completes', async () => {
  const unhandled = watchUnhandledRejections();
  const storage = new MemoryStorage({ async: true });
  storage.seedEvent(1, [{ ws: WS, seq: SEQ, value: 5 }]);
  storage.failReads = 4;
  const errors = [];
  const s = new Sequencer({ params: params(), storage, onError: (e) => errors.push(e) });
  await s.whenReady();
  assert.equal(errors.length, 4);
  assert.ok(errors.every((e) => e instanceof StorageError));
  assert.equal(await s.start(KIND, WS), 2);
  assert.equal(s.next(SEQ), 6);
  s.close();
  unhandled.check();
});

test('storage methods that throw synchronously are retried like rejections', async () => {
  const storage = new MemoryStorage();
  let throwsLeft = 2;
  const realWrite = storage.write.bind(storage);
  storage.write = (values, next) => {
    if (throwsLeft-- > 0) throw new Error('disk on fire');
    return realWrite(values, next);
  };
  const errors = [];
  const s = await Sequencer.open({ params: params(), storage, onError: (e) => errors.push(e) });
  assert.equal(await s.start(KIND, WS), 1);
  s.next(SEQ);
  s.flush();
  await s.whenFlushed();
  assert.equal(errors.length, 2);
  assert.equal(errors[0].cause.message, 'disk on fire');
  assert.equal(storage.number(WS, SEQ), 1);
  s.close();
});

test('actualize with a write in flight waits for the write, then recovers what it wrote', async () => {
  const storage = new MemoryStorage();
  const s = await Sequencer.open({ params: params(), storage });
  storage.holdWrites = true;
  assert.equal(await s.start(KIND, WS), 1);
  storage.append(1, [{ ws: WS, seq: SEQ, value: s.next(SEQ) }]);
  s.flush();
  await storage.waitFor(() => storage.heldWrites === 1);
  assert.equal(await s.start(KIND, WS), 2);
  s.next(SEQ);
  s.actualize(); // the second command failed
  storage.holdWrites = false;
  storage.releaseWrites();
  await s.whenReady();
  assert.equal(await s.start(KIND, WS), 2);
  assert.equal(s.next(SEQ), 2);
  s.close();
});

test('close stops the flusher and the actualizer at once: no timers stay armed and late outcomes are ignored', async () => {
  const unhandled = watchUnhandledRejections();
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();

  // A write failing over and over keeps a retry timer armed until close.
  const storage = new MemoryStorage();
  const errors = [];
  const s = await Sequencer.open({ params: params({ retryDelayMs: 50, maxRetryDelayMs: 50 }), storage, onError: (e) => errors.push(e) });
  storage.failWrites = 1_000_000;
  assert.equal(await s.start(KIND, WS), 1);
  s.next(SEQ);
  s.flush();
  await new Promise((r) => setImmediate(r));
  assert.equal(errors.length, 1);
  assert.equal(timers(), before + 1, 'a retry is scheduled');
  s.close();
  assert.equal(timers(), before, 'close clears the retry timer');

  // A write in flight at close: its outcome is ignored, whenever it comes.
  const held = new MemoryStorage();
  const t = await Sequencer.open({ params: params(), storage: held, onError: (e) => errors.push(e) });
  held.holdWrites = true;
  assert.equal(await t.start(KIND, WS), 1);
  t.next(SEQ);
  t.flush();
  await held.waitFor(() => held.heldWrites === 1);
  t.close();
  held.failHeldWrites();
  await new Promise((r) => setImmediate(r));
  assert.equal(errors.length, 1, 'no error reported after close');
  unhandled.check();
});

test('a storage that answers a numbers read synchronously: start begins the cold workspace\'s transaction within the call', async () => {
  const storage = new MemoryStorage();
  const s = await Sequencer.open({ params: params(), storage });
  const started = s.start(KIND, WS); // not awaited
  assert.equal(s.next(SEQ), 1, 'the transaction began before start returned');
  assert.equal(await started, 1);
  s.flush();
  s.close();
});

test('a storage that answers a numbers read later: start begins the transaction only once the read settles', async () => {
  const sync = new MemoryStorage();
  const storage = {
    readNumbers: (ws, seqs) => Promise.resolve(sync.readNumbers(ws, seqs)),
    readNextOffset: () => sync.readNextOffset(),
    write: (values, nextOffset) => sync.write(values, nextOffset),
    readPlog: (from, maxEvents) => sync.readPlog(from, maxEvents),
  };
  const s = await Sequencer.open({ params: params(), storage });
  const started = s.start(KIND, WS);
  assert.throws(() => s.tryStart(KIND, WS), /a start is waiting for storage/);
  assert.equal(await started, 1);
  assert.equal(s.next(SEQ), 1);
  s.flush();
  s.close();
});
