/**
 * Every misuse surfaces as a `SequencerError` subclass with a stable code, and changes nothing.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AlreadyActualizingError,
  CleanedUpError,
  InvalidArgumentError,
  InvalidParamsError,
  MalformedNumbersError,
  MalformedPlogPageError,
  MemoryStorage,
  NoTransactionError,
  Sequencer,
  SequencerError,
  StorageError,
  TransactionInProgressError,
  UnknownSeqIdError,
  UnknownWsKindError,
  UnsafeIntegerError,
  errorClasses,
} from 'plog-sequencer';
import { KIND, SEQ, WS, params, rejectsWith } from './helpers.js';

const open = (storage = new MemoryStorage(), extra = {}) => Sequencer.open({ params: params(extra), storage });

test('a second start is refused with TRANSACTION_IN_PROGRESS and the first transaction goes on', async () => {
  const s = await open();
  assert.equal(await s.start(KIND, WS), 1);
  await rejectsWith(() => s.start(KIND, WS), TransactionInProgressError);
  await rejectsWith(() => s.tryStart(KIND, WS + 1), TransactionInProgressError);
  assert.equal(s.next(SEQ), 1);
  s.flush();
  s.close();
});

test('a start while another start waits for storage is refused with TRANSACTION_IN_PROGRESS', async () => {
  const s = await open(new MemoryStorage({ async: true }));
  const first = s.start(KIND, WS);
  await rejectsWith(() => s.start(KIND, WS), TransactionInProgressError);
  assert.equal(await first, 1);
  s.close();
});

test('actualize while a start waits for its numbers read: that start resolves to "not now"', async () => {
  const s = await open(new MemoryStorage({ async: true }));
  const started = s.start(KIND, WS);
  s.actualize();
  assert.equal(await started, 0);
  assert.equal(s.notNowReason, 'actualizing');
  await s.whenReady();
  assert.equal(await s.start(KIND, WS), 1);
  s.close();
});

test('next and flush without a transaction are refused with NO_TRANSACTION', async () => {
  const s = await open();
  await rejectsWith(() => s.next(SEQ), NoTransactionError);
  await rejectsWith(() => s.flush(), NoTransactionError);
  assert.equal(await s.start(KIND, WS), 1);
  s.flush();
  await rejectsWith(() => s.next(SEQ), NoTransactionError);
  await rejectsWith(() => s.flush(), NoTransactionError);
  s.close();
});

test('next and flush while actualizing are refused with NO_TRANSACTION', async () => {
  const s = new Sequencer({ params: params(), storage: new MemoryStorage() });
  await rejectsWith(() => s.next(SEQ), NoTransactionError);
  await rejectsWith(() => s.flush(), NoTransactionError);
  s.close();
});

test('an unknown workspace kind is refused with UNKNOWN_WS_KIND', async () => {
  const s = await open();
  const e = await rejectsWith(() => s.start(99, WS), UnknownWsKindError);
  assert.match(e.message, /99/);
  await rejectsWith(() => s.tryStart(99, WS), UnknownWsKindError);
  assert.equal(s.status, 'ready');
  s.close();
});

test('an unknown sequence is refused with UNKNOWN_SEQ_ID and the transaction goes on', async () => {
  const s = await open();
  assert.equal(await s.start(KIND, WS), 1);
  await rejectsWith(() => s.next(77), UnknownSeqIdError);
  assert.equal(s.next(SEQ), 1);
  s.close();
});

test('actualize while actualizing is refused with ALREADY_ACTUALIZING', async () => {
  const s = new Sequencer({ params: params(), storage: new MemoryStorage() });
  await rejectsWith(() => s.actualize(), AlreadyActualizingError);
  await s.whenReady();
  s.actualize();
  await rejectsWith(() => s.actualize(), AlreadyActualizingError);
  await s.whenReady();
  s.close();
});

test('every call after close is refused with CLEANED_UP, and close is idempotent', async () => {
  const s = await open();
  assert.equal(await s.start(KIND, WS), 1);
  s.close();
  s.close();
  assert.equal(s.status, 'closed');
  await rejectsWith(() => s.start(KIND, WS), CleanedUpError);
  await rejectsWith(() => s.tryStart(KIND, WS), CleanedUpError);
  await rejectsWith(() => s.next(SEQ), CleanedUpError);
  await rejectsWith(() => s.flush(), CleanedUpError);
  await rejectsWith(() => s.actualize(), CleanedUpError);
  await rejectsWith(() => s.whenReady(), CleanedUpError);
  await rejectsWith(() => s.whenFlushed(), CleanedUpError);
});

test('close rejects a pending whenReady and a start waiting for storage with CLEANED_UP', async () => {
  const storage = new MemoryStorage({ async: true });
  const s = new Sequencer({ params: params(), storage });
  const ready = s.whenReady();
  s.close();
  await rejectsWith(() => ready, CleanedUpError);

  const t = await open(new MemoryStorage({ async: true }));
  const started = t.start(KIND, WS);
  t.close();
  await rejectsWith(() => started, CleanedUpError);
});

test('invalid params are refused with INVALID_PARAMS', async () => {
  const storage = new MemoryStorage();
  const cases = [
    { seqTypes: {} },
    { seqTypes: { 1: {} } },
    { seqTypes: { 1: { 1: 0 } } },
    { seqTypes: { 1: { 1: 1, 2: 1 } }, lruCacheSize: 1 },
    { seqTypes: { 1: { 1: 1 } }, maxUnflushedValues: 0 },
    { seqTypes: { 1: { 1: 1 } }, retryDelayMs: 10, maxRetryDelayMs: 5 },
  ];
  for (const p of cases) {
    await rejectsWith(() => new Sequencer({ params: p, storage }), InvalidParamsError);
  }
  await rejectsWith(() => new Sequencer({ params: null, storage }), InvalidParamsError);
});

test('params given as Maps work like objects', async () => {
  const seqTypes = new Map([[KIND, new Map([[SEQ, 5]])]]);
  const s = await Sequencer.open({ params: { seqTypes }, storage: new MemoryStorage() });
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(s.next(SEQ), 5);
  s.close();
});

test('arguments that are not integers in range are refused with INVALID_ARGUMENT', async () => {
  const storage = new MemoryStorage();
  await rejectsWith(() => new Sequencer({ params: { seqTypes: { 70000: { 1: 1 } } }, storage }), InvalidArgumentError);
  await rejectsWith(() => new Sequencer({ params: { seqTypes: { 1: { 1: 2 ** 53 } } }, storage }), InvalidArgumentError);
  await rejectsWith(() => new Sequencer({ params: { seqTypes: { 1: { 1: 1 } }, retryDelayMs: -1 }, storage }), InvalidArgumentError);
  await rejectsWith(() => new Sequencer({ params: params(), storage: {} }), InvalidArgumentError);
  await rejectsWith(() => new Sequencer({ params: params(), storage, plogPageSize: 0 }), InvalidArgumentError);
  const s = await open();
  for (const ws of [-1, 1.5, NaN, 2 ** 53, Infinity]) {
    await rejectsWith(() => s.start(KIND, ws), InvalidArgumentError);
  }
  await rejectsWith(() => s.start(-1, WS), InvalidArgumentError);
  assert.equal(await s.start(KIND, WS), 1);
  await rejectsWith(() => s.next(65536), InvalidArgumentError);
  await rejectsWith(() => s.next(0.5), InvalidArgumentError);
  assert.equal(s.next(SEQ), 1);
  s.close();
});

test('a number beyond Number.MAX_SAFE_INTEGER is refused with UNSAFE_INTEGER and the transaction cannot be flushed', async () => {
  const s = await Sequencer.open({
    params: { seqTypes: { [KIND]: { [SEQ]: Number.MAX_SAFE_INTEGER } } },
    storage: new MemoryStorage(),
  });
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(s.next(SEQ), Number.MAX_SAFE_INTEGER);
  await rejectsWith(() => s.next(SEQ), UnsafeIntegerError);
  await rejectsWith(() => s.flush(), UnsafeIntegerError);
  s.actualize();
  await s.whenReady();
  assert.equal(await s.start(KIND, WS), 1);
  assert.equal(s.next(SEQ), Number.MAX_SAFE_INTEGER, 'actualize dropped the unsafe number');
  s.flush();
  s.close();
});

test('a numbers read of the wrong length rejects start with MALFORMED_NUMBERS; the next start reads again', async () => {
  const storage = new MemoryStorage();
  const s = await open(storage);
  const real = storage.readNumbers.bind(storage);
  storage.readNumbers = () => [1, 2, 3];
  await rejectsWith(() => s.start(KIND, WS), MalformedNumbersError);
  storage.readNumbers = () => ['x'];
  await rejectsWith(() => s.start(KIND, WS), InvalidArgumentError);
  storage.readNumbers = real;
  assert.equal(await s.start(KIND, WS), 1);
  s.close();
});

test('a failing numbers read rejects start with STORAGE (cause kept); the next start succeeds', async () => {
  const storage = new MemoryStorage({ async: true });
  const s = await open(storage);
  storage.failNumberReads = 1;
  const e = await rejectsWith(() => s.start(KIND, WS), StorageError);
  assert.equal(e.op, 'readNumbers');
  assert.equal(e.cause.code, 'INJECTED_FAULT');
  assert.equal(s.status, 'ready');
  assert.equal(await s.start(KIND, WS), 1);
  s.close();
});

test('a malformed PLog page is reported as MALFORMED_PLOG_PAGE and read again until it is right', async () => {
  const storage = new MemoryStorage();
  storage.seedEvent(5, [{ ws: WS, seq: SEQ, value: 9 }]);
  const real = storage.readPlog.bind(storage);
  let bad = 2;
  storage.readPlog = (from, max) =>
    bad-- > 0 ? { values: { offset: [from + 10], ws: [WS], seq: [SEQ], value: [1] }, next: from, end: true } : real(from, max);
  const errors = [];
  const s = new Sequencer({ params: params(), storage, onError: (e) => errors.push(e) });
  await s.whenReady();
  assert.deepEqual(errors.map((e) => e.code), ['MALFORMED_PLOG_PAGE', 'MALFORMED_PLOG_PAGE']);
  assert.ok(errors[0] instanceof MalformedPlogPageError);
  assert.equal(await s.start(KIND, WS), 6);
  assert.equal(s.next(SEQ), 10);
  s.close();
});

test('every coded error class carries its code, statically and on instances', () => {
  for (const [code, cls] of Object.entries(errorClasses)) {
    assert.equal(cls.code, code);
    const e = new cls('m');
    assert.ok(e instanceof SequencerError && e instanceof Error);
    assert.equal(e.code, code);
    assert.equal(e.name, cls.name);
  }
  assert.equal(Object.keys(errorClasses).length, 15); // the core's 14 (STORAGE aside) and NOT_INITIALIZED
});
