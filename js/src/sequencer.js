/**
 * The JavaScript driver: the wasm core plus its flusher and actualizer on the JS event loop.
 * @module
 */

import {
  CoreStatus,
  Sentinel,
  SequencerCore,
  WorkKind,
  sequenceStatusNames,
  statusNames,
  wasmMemory,
} from '../pkg/sequencer.js';
import {
  CleanedUpError,
  errorFrom,
  InvalidArgumentError,
  StorageError,
  TransactionInProgressError,
} from './errors.js';
import { toCoreParams } from './params.js';
import { requireWasm } from './wasm.js';

/**
 * Names by number, read from the wasm module on first use (it is instantiated after this
 * module loads).
 * @template T
 * @param {() => string[]} read
 * @returns {() => ReadonlyArray<T>}
 */
function table(read) {
  /** @type {ReadonlyArray<T> | null} */
  let names = null;
  return () => (names ??= /** @type {ReadonlyArray<T>} */ (Object.freeze(read())));
}

/** Status names by the core's status number. */
const STATUS = /** @type {() => ReadonlyArray<import('./index').SequencerStatus>} */ (table(statusNames));
/** The facade's status names by the core's number (docs/DESIGN.md §5.3). */
const SEQUENCE_STATUS = /** @type {() => ReadonlyArray<import('./index').SequenceStatus>} */ (
  table(sequenceStatusNames)
);

/** @type {Float64Array} */
let memoryF64 = new Float64Array(0);

/**
 * The wasm memory as numbers, for the answers the core writes in place (`loadRequestFor`): a
 * view made again once the memory grew (the old view is then detached, its length 0).
 * @returns {Float64Array}
 */
function f64Memory() {
  if (memoryF64.byteLength === 0) memoryF64 = new Float64Array(/** @type {WebAssembly.Memory} */ (wasmMemory()).buffer);
  return memoryF64;
}

/** The clock used when none is given: `performance.now()` in milliseconds. */
export const defaultClock = Object.freeze({ now: () => performance.now() });

/**
 * True for a Promise or any other thenable.
 * @param {unknown} x
 * @returns {x is PromiseLike<unknown>}
 */
function isThenable(x) {
  return x !== null && (typeof x === 'object' || typeof x === 'function') && typeof (/** @type {any} */ (x).then) === 'function';
}

/**
 * Runs `fn` as a macrotask, after the microtasks of the current turn: the flusher then batches
 * every transaction of the turn into one write. `setImmediate` in Node; a `MessageChannel` in
 * browsers (no 4 ms clamp as with nested `setTimeout`).
 * @type {(fn: () => void) => void}
 */
const soon = (() => {
  if (typeof globalThis.setImmediate === 'function') return (fn) => globalThis.setImmediate(fn);
  if (typeof globalThis.MessageChannel === 'function') {
    /** @type {Array<() => void>} */
    const queue = [];
    const channel = new MessageChannel();
    channel.port1.onmessage = () => queue.shift()?.();
    return (fn) => {
      queue.push(fn);
      channel.port2.postMessage(null);
    };
  }
  return (fn) => setTimeout(fn, 0);
})();

/** The parallel arrays of a page with no values. */
const EMPTY = new Float64Array(0);

/**
 * A sequencer: dense, monotonic numbers per workspace, persisted through `storage` and
 * recovered from its PLog. See the package README for the storage contract.
 *
 * Use: `await start(kind, ws)`, `next(seq)` per number, then `flush()` once the event is in the
 * PLog, or `actualize()` if it is not; or the batched calls (`startNext`, `flushStartNext`,
 * `startBatch`, `flushStartBatch`). The flusher and the actualizer run on the event loop
 * until `close()`. Every rule of the calls is the wasm core's (its shell); this class performs
 * the storage work the core hands out and the numbers reads it asks for.
 */
export class Sequencer {
  /** @type {SequencerCore} */ #core;
  /** @type {import('./index').SeqStorage} */ #storage;
  /** @type {import('./index').Clock} */ #clock;
  /** @type {number} */ #pageSize;
  /** @type {(err: import('./errors.js').SequencerError) => void} */ #onError;
  #closed = false;
  /** A drain of the core's work queue is queued. */
  #kicked = false;
  /** Storage operations of the flusher and the actualizer awaiting their outcome. */
  #inFlight = 0;
  /** A start waits for a numbers read. */
  #starting = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */ #timer = undefined;
  #timerAt = -1;
  /** @type {import('./index').NotNowReason | null} */ #notNowReason = null;
  /** @type {Array<{ resolve: () => void, reject: (e: Error) => void }>} */ #readyWaiters = [];
  /** @type {Array<{ resolve: () => void, reject: (e: Error) => void }>} */ #flushedWaiters = [];
  /** The WLog offset `startEvent` writes. */
  #wlog = new Float64Array(1);
  #drainNow = () => this.#drain();
  #onTimer = () => {
    this.#timer = undefined;
    this.#timerAt = -1;
    if (this.#closed) return;
    this.#core.pump();
    this.#drain();
  };

  /**
   * Creates a sequencer; it starts actualizing from `storage` at once (in a macrotask).
   * Throws `InvalidParamsError` / `InvalidArgumentError` for invalid params, and
   * `NotInitializedError` before the browser entry's `init()` has settled.
   * @param {import('./index').SequencerOptions} options
   */
  constructor(options) {
    requireWasm('new Sequencer()');
    const { params, storage, clock = defaultClock, plogPageSize = 256, onError } = options ?? {};
    for (const m of ['readNumbers', 'readNextOffset', 'write', 'readPlog']) {
      if (typeof storage?.[m] !== 'function') {
        throw new InvalidArgumentError(`storage.${m} must be a function`);
      }
    }
    if (storage.readNumbersMany !== undefined && typeof storage.readNumbersMany !== 'function') {
      throw new InvalidArgumentError('storage.readNumbersMany must be a function if given');
    }
    if (typeof clock?.now !== 'function') throw new InvalidArgumentError('clock.now must be a function');
    if (!Number.isSafeInteger(plogPageSize) || plogPageSize < 1) {
      throw new InvalidArgumentError(`plogPageSize must be a positive integer, got ${plogPageSize}`);
    }
    const coreParams = toCoreParams(params);
    try {
      this.#core = new SequencerCore(coreParams, clock);
    } finally {
      coreParams.free();
    }
    this.#storage = storage;
    this.#clock = clock;
    this.#pageSize = plogPageSize;
    this.#onError = typeof onError === 'function' ? onError : () => {};
    this.#kick();
  }

  /**
   * Creates a sequencer and waits until its first actualization is done.
   * @param {import('./index').SequencerOptions} options
   * @returns {Promise<Sequencer>}
   */
  static async open(options) {
    const s = new Sequencer(options);
    await s.whenReady();
    return s;
  }

  /** What the sequencer is doing: `'actualizing' | 'ready' | 'in-transaction' | 'closed'`. */
  get status() {
    return STATUS()[this.#core.status()];
  }

  /** Why the last start returned 0 (or stopped a batch), or `null` if it began. */
  get notNowReason() {
    return this.#notNowReason;
  }

  /** How many numbers are held in memory: in the cache, unflushed, in the transaction. */
  get heldNumbers() {
    const [cached, unflushed, transaction] = this.#core.heldNumbers();
    return { cached, unflushed, transaction };
  }

  /**
   * Begins a sequencing transaction for workspace `ws` of kind `kind`, reading the workspace's
   * numbers from storage first when they are not in memory.
   *
   * Resolves to the PLog offset of the event being numbered (≥ 1), or to `0` for "not now"
   * (see `notNowReason`): actualization is in progress or too many values wait to be flushed.
   * Rejects with a coded error on misuse, or with `StorageError` when the numbers read failed
   * (no transaction began; try again).
   * @param {number} kind
   * @param {number} ws
   * @returns {Promise<number>}
   */
  async start(kind, ws) {
    return this.#start(kind, ws);
  }

  /**
   * `start`, as far as it gets within the call: the offset (or `0`, see `notNowReason`) when
   * the start completed synchronously, as it does when the workspace's numbers are in memory
   * or when `storage.readNumbers` answered synchronously; otherwise a promise of it, as
   * `start` returns. A cold workspace on synchronous storage thus starts with no promise and
   * no turn of the microtask queue. Throws (or rejects) as `start` does.
   * @param {number} kind
   * @param {number} ws
   * @returns {number | Promise<number>}
   */
  startNow(kind, ws) {
    this.#notStarting();
    const r = this.#core.start(kind, ws);
    if (r !== Sentinel.Load) return this.#started(r);
    this.#kick();
    return this.#start(kind, ws);
  }

  /**
   * `start` without waiting: the offset if the transaction began synchronously, else `0`
   * with `notNowReason` `'actualizing'`, `'too-many-unflushed'` or `'needs-load'` (the
   * workspace's numbers must be read: use `start`). The fast path for hot loops.
   * @param {number} kind
   * @param {number} ws
   * @returns {number}
   */
  tryStart(kind, ws) {
    this.#notStarting();
    return this.#started(this.#core.start(kind, ws));
  }

  /**
   * `start`, then `next` of each of `seqs`, in one call into the core: resolves to the offset
   * (≥ 1, the numbers in `out`, in the order of `seqs`) or to 0 for "not now". A refused
   * `next` drops the whole transaction (it actualizes) and rejects.
   * @param {number} kind
   * @param {number} ws
   * @param {ArrayLike<number>} seqs
   * @param {Float64Array} [out] receives the numbers (at least `seqs.length` long)
   * @returns {Promise<number>}
   */
  async startNext(kind, ws, seqs, out = new Float64Array(seqs.length)) {
    return this.#loading(() => this.#core.startNext(kind, ws, seqs, out));
  }

  /**
   * `flush`, then `startNext`, in one call into the core (the fast path of one event per
   * call): completes the transaction in progress and begins the next. `NoTransactionError` /
   * `CleanedUpError` come from the flush (nothing was done); any other refusal comes from the
   * start, after the flush.
   * @param {number} kind
   * @param {number} ws
   * @param {ArrayLike<number>} seqs
   * @param {Float64Array} [out]
   * @returns {Promise<number>}
   */
  async flushStartNext(kind, ws, seqs, out = new Float64Array(seqs.length)) {
    let flushed = false;
    return this.#loading(() => {
      // After a load the flush is done: only the start is made again.
      const r = flushed ? this.#core.startNext(kind, ws, seqs, out) : this.#core.flushStartNext(kind, ws, seqs, out);
      flushed = true;
      return r;
    });
  }

  /**
   * Numbers and stages one event per workspace of `wsList` (all of kind `kind`), each taking a
   * `next` of each of `seqs`, in one call into the core; cold workspaces are read first with
   * one `storage.readNumbersMany` (or `readNumbers` per workspace). Stops at the first "not
   * now" (`notNowReason`; also `'needs-load'` if a workspace read for the batch was evicted
   * before its turn: call again for the rest). Append the started events to the PLog, then
   * `flush()` (or `flushStartBatch`) completes them, `actualize()` drops them.
   * @param {number} kind
   * @param {ArrayLike<number>} wsList
   * @param {ArrayLike<number>} seqs
   * @returns {Promise<import('./index').BatchResult>}
   */
  async startBatch(kind, wsList, seqs) {
    return this.#batch(kind, wsList, seqs, false);
  }

  /**
   * `flush`, then `startBatch`, in one call into the core (one call per batch). Refusals
   * `NoTransactionError` / `CleanedUpError` come from the flush: nothing was done.
   * @param {number} kind
   * @param {ArrayLike<number>} wsList
   * @param {ArrayLike<number>} seqs
   * @returns {Promise<import('./index').BatchResult>}
   */
  async flushStartBatch(kind, wsList, seqs) {
    return this.#batch(kind, wsList, seqs, true);
  }

  /**
   * `StartEvent` (docs/DESIGN.md §5.1; params with `systemParams`): the event's PLog and WLog
   * offsets, or `null` for "not now" (see `notNowReason`); never waits for recovery (the facade's
   * `EventSequencer` does).
   * @param {number} ws
   * @returns {Promise<import('./index').StartedEvent | null>}
   */
  async startEvent(ws) {
    const plogOffset = await this.#loading(() => this.#core.startEvent(ws, this.#wlog));
    return plogOffset > 0 ? { plogOffset, wlogOffset: this.#wlog[0] } : null;
  }

  /**
   * The next number of sequence `seq` in the transaction in progress.
   * @param {number} seq
   * @returns {number}
   */
  next(seq) {
    return this.#number(this.#core.next(seq));
  }

  /**
   * `NextRecID` (docs/DESIGN.md §5.1): the next O/W document or record id of the event's
   * workspace.
   */
  nextRecId() {
    return this.#number(this.#core.nextRecId());
  }

  /**
   * `NextCRecID` (docs/DESIGN.md §5.1): the next C document or record id of the event's
   * workspace.
   */
  nextCRecId() {
    return this.#number(this.#core.nextCRecId());
  }

  /**
   * Ends the open event but not the transaction: its offset and numbers are taken and the
   * next `start` numbers another event of the same transaction. Staged events reach storage
   * only after `flush()` (append them all to the PLog first); `actualize()` drops them all.
   */
  stage() {
    this.#check(this.#core.stage());
  }

  /**
   * Completes the transaction in progress (its event is in the PLog) and wakes the flusher.
   * Never waits for storage.
   */
  flush() {
    this.#check(this.#core.flush());
    this.#kick();
  }

  /**
   * Drops the transaction in progress, if any, and everything not yet written, and
   * re-actualizes from storage; `start` says "not now" until that is done, then hands out the
   * same offset and numbers again.
   */
  actualize() {
    this.#check(this.#core.actualize());
    this.#kick();
  }

  /** `FinishEvent` (docs/DESIGN.md §5.1): `flush()`. */
  finishEvent() {
    this.#check(this.#core.finishEvent());
    this.#kick();
  }

  /**
   * `CancelEvent` (docs/DESIGN.md §5.1): drops the event in progress (`NoTransactionError`
   * without one).
   */
  cancelEvent() {
    this.#check(this.#core.cancelEvent());
    this.#kick();
  }

  /** The facade's status, docs/DESIGN.md §5.3: `'recover' | 'ready' | 'eventing' | 'finished'`. */
  get sequenceStatus() {
    return SEQUENCE_STATUS()[this.#core.sequenceStatus()];
  }

  /**
   * Resolves once actualization is done (at once if it is); rejects with `CleanedUpError` if
   * the sequencer is closed first.
   * @returns {Promise<void>}
   */
  whenReady() {
    if (this.#closed) return Promise.reject(new CleanedUpError('the sequencer was closed'));
    if (this.#core.status() !== CoreStatus.Actualizing) return Promise.resolve();
    return new Promise((resolve, reject) => this.#readyWaiters.push({ resolve, reject }));
  }

  /**
   * Resolves once every flushed transaction is durable in storage and no storage work is in
   * flight or scheduled; rejects with `CleanedUpError` if the sequencer is closed first.
   * @returns {Promise<void>}
   */
  whenFlushed() {
    if (this.#closed) return Promise.reject(new CleanedUpError('the sequencer was closed'));
    if (this.#idle()) return Promise.resolve();
    return new Promise((resolve, reject) => this.#flushedWaiters.push({ resolve, reject }));
  }

  /**
   * Stops the flusher and the actualizer at once: timers are cleared, outcomes of storage
   * calls still in flight are ignored, unflushed values are dropped, pending `whenReady` /
   * `whenFlushed` reject, and every later call throws `CleanedUpError`. Idempotent.
   */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#core.cleanup();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const err = () => new CleanedUpError('the sequencer was closed');
    for (const w of this.#readyWaiters.splice(0)) w.reject(err());
    for (const w of this.#flushedWaiters.splice(0)) w.reject(err());
  }

  // ---- calls ----------------------------------------------------------------------------------

  #notStarting() {
    if (this.#starting) throw new TransactionInProgressError('a start is waiting for storage');
  }

  /**
   * Throws the core's refusal if `r` is one.
   * @param {number} r
   */
  #check(r) {
    if (r === Sentinel.Refused) throw errorFrom(this.#core);
  }

  /**
   * A number from the core, or its refusal thrown.
   * @param {number} n
   * @returns {number}
   */
  #number(n) {
    if (n === Sentinel.Refused) throw errorFrom(this.#core);
    return n;
  }

  /**
   * Runs a starting call, performing the numbers reads the core hands out (and calling again
   * after each) until it starts, says "not now" or is refused: the offset or 0, or a promise of
   * it while storage answers later. A read storage answers synchronously is reported at once,
   * so with such a storage a start completes within the call.
   * @param {() => number} call
   * @returns {number | Promise<number>}
   */
  #loading(call) {
    this.#notStarting();
    let r = call();
    this.#kick();
    while (r === Sentinel.Load) {
      const loading = this.#load();
      if (loading !== undefined) return loading.then(() => this.#loading(call));
      r = call();
      this.#kick();
    }
    return this.#started(r);
  }

  /**
   * `start`: the offset or 0, or a promise of it while storage answers later. A numbers read
   * the core still awaits for this very start (a `tryStart` said `'needs-load'`) is performed
   * as the core handed it out, not asked for again; each read is reported together with the
   * start it was for, in one call into the core.
   * @param {number} kind
   * @param {number} ws
   * @returns {number | Promise<number>}
   */
  #start(kind, ws) {
    this.#notStarting();
    const core = this.#core;
    const at = core.loadRequestFor(kind, ws);
    if (at !== 0) {
      // In place: the count of sequences, the ticket, the workspace, the sequences.
      const mem = f64Memory();
      const i = at / 8;
      const end = i + 3 + mem[i];
      // A plain array, as storage.readNumbers takes.
      const seqs = [];
      for (let k = i + 3; k < end; k++) seqs.push(mem[k]);
      return this.#loadStart(kind, ws, mem[i + 1], mem[i + 2], seqs);
    }
    const r = core.start(kind, ws);
    this.#kick();
    if (r !== Sentinel.Load) return this.#started(r);
    return this.#loadStartRequested(kind, ws);
  }

  /**
   * `#loadStart` of the read the core last handed out (`loadRequest`).
   * @param {number} kind
   * @param {number} ws
   * @returns {number | Promise<number>}
   */
  #loadStartRequested(kind, ws) {
    const request = this.#core.loadRequest(); // ticket, workspace, sequences
    // A plain array, as storage.readNumbers takes (a loop: Array.from of a typed array is slower).
    const seqs = [];
    for (let i = 2; i < request.length; i++) seqs.push(request[i]);
    return this.#loadStart(kind, ws, request[0], request[1], seqs);
  }

  /**
   * Performs the numbers read of a start, then reports it and makes the start.
   * @param {number} kind
   * @param {number} ws
   * @param {number} ticket the read's
   * @param {number} loadWs the workspace to read
   * @param {number[]} seqs the sequences to read
   * @returns {number | Promise<number>}
   */
  #loadStart(kind, ws, ticket, loadWs, seqs) {
    const numbers = this.#read('readNumbers', ticket, () => this.#storage.readNumbers(loadWs, seqs));
    if (isThenable(numbers)) return numbers.then((n) => this.#completeStart(kind, ws, ticket, n));
    return this.#completeStart(kind, ws, ticket, numbers);
  }

  /**
   * Reports a start's numbers read and makes the start (`completeNumbersStart`): the offset or
   * 0, or the next read's promise. A refused report abandons the read and is thrown, unless the
   * read was superseded (by `actualize`): then the start is made again.
   * @param {number} kind
   * @param {number} ws
   * @param {number} ticket
   * @param {ArrayLike<number>} numbers
   * @returns {number | Promise<number>}
   */
  #completeStart(kind, ws, ticket, numbers) {
    const core = this.#core;
    let r;
    try {
      r = core.completeNumbersStart(ticket, numbers);
    } catch (cause) {
      // Not an array of numbers at all.
      core.fail(ticket);
      throw new InvalidArgumentError('storage.readNumbers must return an array of numbers', { cause });
    }
    this.#kick();
    if (r === Sentinel.Load) return this.#loadStartRequested(kind, ws);
    if (r === Sentinel.Refused) {
      const err = errorFrom(core);
      if (err.code === 'UNKNOWN_TICKET') return this.#start(kind, ws); // superseded by actualize
      core.fail(ticket); // abandons the read (refused, harmlessly, if the start was refused)
      throw err;
    }
    return this.#started(r);
  }

  /**
   * Maps a core start result to the offset or 0 (`notNowReason`), throwing refusals.
   * @param {number} r
   * @returns {number}
   */
  #started(r) {
    if (r > 0) {
      this.#notNowReason = null;
      return r;
    }
    const reason = notNow(r);
    if (reason === undefined) throw errorFrom(this.#core);
    this.#notNowReason = reason;
    return 0;
  }

  /**
   * @param {number} kind
   * @param {ArrayLike<number>} wsList
   * @param {ArrayLike<number>} seqs
   * @param {boolean} flush
   * @returns {Promise<import('./index').BatchResult>}
   */
  async #batch(kind, wsList, seqs, flush) {
    this.#notStarting();
    const core = this.#core;
    let r = flush ? core.flushStartBatch(kind, wsList, seqs) : core.startBatch(kind, wsList, seqs);
    this.#kick();
    // Before the first event (nothing changed yet) the core may ask for the cold workspaces'
    // numbers, or for one workspace's: read them and call again, without the flush.
    while (r[0] === 0 && (r[2] === Sentinel.LoadMany || r[2] === Sentinel.Load)) {
      if (r[2] === Sentinel.LoadMany) await this.#loadMany(kind);
      else await this.#load();
      r = core.startBatch(kind, wsList, seqs);
      this.#kick();
    }
    if (r[0] === Sentinel.Refused) throw errorFrom(core);
    const stop = r[2];
    this.#notNowReason = stop === 0 ? null : (notNow(stop) ?? 'needs-load');
    return { started: r[0], firstOffset: r[1], notNowReason: this.#notNowReason, numbers: r.subarray(3) };
  }

  /**
   * Performs the numbers read the core asked for and reports it: `undefined` once done when
   * storage answered synchronously, else a promise of the report.
   * @returns {Promise<void> | undefined}
   */
  #load() {
    const core = this.#core;
    const request = core.loadRequest(); // ticket, workspace, sequences
    const ticket = request[0];
    const ws = request[1];
    // A plain array, as storage.readNumbers takes (a loop: Array.from of a typed array is slower).
    const seqs = [];
    for (let i = 2; i < request.length; i++) seqs.push(request[i]);
    const report = (numbers) => this.#report(ticket, 'readNumbers', () => core.completeNumbers(ticket, numbers));
    const numbers = this.#read('readNumbers', ticket, () => this.#storage.readNumbers(ws, seqs));
    if (isThenable(numbers)) return numbers.then(report);
    report(numbers);
    return undefined;
  }

  /**
   * Performs the numbers read of a batch's cold workspaces and reports it.
   * @param {number} kind
   */
  async #loadMany(kind) {
    const core = this.#core;
    const wsList = core.loadManyWs();
    const seqs = Array.from(core.loadSeqs());
    const storage = this.#storage;
    const numbers = await this.#read('readNumbersMany', -1, async () => {
      if (typeof storage.readNumbersMany === 'function') return storage.readNumbersMany(Array.from(wsList), seqs);
      const all = [];
      for (const w of wsList) all.push(...Array.from(await storage.readNumbers(w, seqs)));
      return all;
    });
    this.#report(-1, 'readNumbersMany', () => core.completeNumbersMany(kind, wsList, numbers));
  }

  /**
   * A numbers read: its result, or a promise of it when storage answers later; its failure
   * abandons the load (`ticket`, -1 for none) and is thrown (or rejects).
   * @param {string} op
   * @param {number} ticket
   * @param {() => unknown} read
   * @returns {any}
   */
  #read(op, ticket, read) {
    this.#starting = true;
    let numbers;
    try {
      numbers = read();
    } catch (cause) {
      this.#starting = false;
      throw this.#readFailed(op, ticket, cause);
    }
    if (!isThenable(numbers)) {
      this.#starting = false;
      return this.#readDone(numbers);
    }
    return Promise.resolve(numbers).then(
      (n) => {
        this.#starting = false;
        return this.#readDone(n);
      },
      (cause) => {
        this.#starting = false;
        throw this.#readFailed(op, ticket, cause);
      },
    );
  }

  /**
   * The error a failed numbers read is thrown as, after abandoning its load.
   * @param {string} op
   * @param {number} ticket
   * @param {unknown} cause
   * @returns {Error}
   */
  #readFailed(op, ticket, cause) {
    if (this.#closed) return new CleanedUpError('the sequencer was closed', { cause });
    if (ticket >= 0) this.#core.fail(ticket); // abandons the read; refused if superseded
    return new StorageError(op, cause);
  }

  /**
   * A read's numbers, unless the sequencer was closed while it ran.
   * @param {unknown} numbers
   * @returns {any}
   */
  #readDone(numbers) {
    if (this.#closed) throw new CleanedUpError('the sequencer was closed');
    return numbers;
  }

  /**
   * Reports a numbers read to the core; a refusal abandons the load and is thrown, unless the
   * read was superseded (then the caller simply calls again).
   * @param {number} ticket
   * @param {string} op
   * @param {() => number} report
   */
  #report(ticket, op, report) {
    const core = this.#core;
    let r;
    try {
      r = report();
    } catch (cause) {
      // Not an array of numbers at all.
      if (ticket >= 0) core.fail(ticket);
      throw new InvalidArgumentError(`storage.${op} must return an array of numbers`, { cause });
    }
    if (r !== Sentinel.Refused) return;
    const err = errorFrom(core);
    if (err.code === 'UNKNOWN_TICKET') return; // superseded by actualize
    if (ticket >= 0) core.fail(ticket);
    throw err;
  }

  // ---- the task loop: flusher and actualizer ------------------------------------------------

  /** Queues a drain as a macrotask (once): it runs after the current turn's transactions. */
  #kick() {
    if (this.#kicked || this.#closed) return;
    this.#kicked = true;
    soon(this.#drainNow);
  }

  /** Performs all storage work the core began, then arms the timer for its wake-up. */
  #drain() {
    this.#kicked = false;
    if (this.#closed) return;
    const core = this.#core;
    for (;;) {
      const kind = core.takeWork();
      if (kind === WorkKind.None) break;
      this.#perform(kind);
      if (this.#closed) return;
    }
    this.#arm();
    this.#notify();
  }

  /**
   * Starts the storage operation for the work taken; its outcome is reported when it settles.
   * @param {number} kind
   */
  #perform(kind) {
    const core = this.#core;
    const ticket = core.workTicket();
    const storage = this.#storage;
    switch (kind) {
      case WorkKind.Write: {
        const flat = core.workValues();
        const n = flat.length / 3;
        const values = { ws: flat.subarray(0, n), seq: flat.subarray(n, 2 * n), value: flat.subarray(2 * n), length: n };
        const nextOffset = core.workNextOffset();
        this.#run('write', ticket, () => storage.write(values, nextOffset), () => core.completeWrite(ticket));
        break;
      }
      case WorkKind.ReadNextOffset:
        this.#run('readNextOffset', ticket, () => storage.readNextOffset(), (offset) =>
          core.completeNextOffset(ticket, Number(offset ?? 0)),
        );
        break;
      case WorkKind.ReadPlog: {
        const from = core.workFrom();
        this.#run('readPlog', ticket, () => storage.readPlog(from, this.#pageSize), (page) =>
          this.#completePage(ticket, page),
        );
        break;
      }
      default:
        throw new Error(`unknown work kind ${kind}`);
    }
  }

  /**
   * Runs one storage operation, sync or async, and reports its outcome to the core.
   * @param {string} op storage method name
   * @param {number} ticket
   * @param {() => unknown} invoke
   * @param {(result: any) => number} report returns the core's status (`Refused` if refused)
   */
  #run(op, ticket, invoke, report) {
    this.#inFlight++;
    let result;
    try {
      result = invoke();
    } catch (cause) {
      this.#settle(op, ticket, undefined, cause, report);
      return;
    }
    if (!isThenable(result)) {
      this.#settle(op, ticket, result, undefined, report);
      return;
    }
    // Both handlers never throw, so the derived promise never rejects.
    Promise.resolve(result).then(
      (value) => {
        if (this.#closed) return;
        this.#settle(op, ticket, value, undefined, report);
        this.#kick();
      },
      (cause) => {
        if (this.#closed) return;
        this.#settle(op, ticket, undefined, cause ?? new Error('rejected'), report);
        this.#kick();
      },
    );
  }

  /**
   * Reports a settled storage operation: its result, or a failure the core retries later.
   * @param {string} op
   * @param {number} ticket
   * @param {unknown} value
   * @param {unknown} cause set when the operation failed
   * @param {(result: any) => number} report
   */
  #settle(op, ticket, value, cause, report) {
    this.#inFlight--;
    const core = this.#core;
    let error;
    if (cause === undefined) {
      try {
        if (report(value) !== Sentinel.Refused) return;
        error = errorFrom(core); // storage returned something the core refused
      } catch (e) {
        error = new InvalidArgumentError(`storage.${op} returned an unusable result`, { cause: e });
      }
    } else {
      error = new StorageError(op, cause);
    }
    if (core.fail(ticket) === Sentinel.Refused) {
      error = errorFrom(core); // only a driver bug gets here
    }
    try {
      this.#onError(error);
    } catch {
      // A throwing error callback must not break the task loop.
    }
  }

  /**
   * Reports a PLog page: `{ values: { offset, ws, seq, value }, next, end }`.
   * @param {number} ticket
   * @param {import('./index').PlogPage} page
   * @returns {number}
   */
  #completePage(ticket, page) {
    const v = page.values;
    return this.#core.completePlogRead(
      ticket,
      v?.offset ?? EMPTY,
      v?.ws ?? EMPTY,
      v?.seq ?? EMPTY,
      v?.value ?? EMPTY,
      page.next,
      page.end === true,
    );
  }

  /** Sets the timer to the core's wake-up, if any. */
  #arm() {
    const at = this.#core.wakeAt();
    if (at < 0) {
      if (this.#timer !== undefined) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#timerAt = -1;
      }
      return;
    }
    if (this.#timer !== undefined && this.#timerAt === at) return;
    clearTimeout(this.#timer);
    // At least 1 ms: a due instant that rounding put in the past must not spin the loop.
    const delay = Math.max(1, Math.ceil(at - this.#clock.now()));
    this.#timerAt = at;
    this.#timer = setTimeout(this.#onTimer, delay);
  }

  /** No storage work in flight, queued, or scheduled. */
  #idle() {
    return !this.#kicked && this.#inFlight === 0 && this.#core.wakeAt() < 0;
  }

  /** Resolves the waiters whose condition holds. */
  #notify() {
    if (this.#readyWaiters.length > 0 && this.#core.status() !== CoreStatus.Actualizing) {
      for (const w of this.#readyWaiters.splice(0)) w.resolve();
    }
    if (this.#flushedWaiters.length > 0 && this.#idle()) {
      for (const w of this.#flushedWaiters.splice(0)) w.resolve();
    }
  }
}

/**
 * `notNowReason` by the core's sentinel, negated: an array indexed by small integers (an object
 * keyed by negative numbers looks each one up as a string, about ten times slower; `tryStart` of
 * a cold workspace pays it on every call). `undefined` for offsets and `Refused`.
 * @param {number} r a start's result
 * @returns {import('./index').NotNowReason | undefined}
 */
const notNow = (r) => NOT_NOW[-r];

/** @type {Array<import('./index').NotNowReason | undefined>} */
const NOT_NOW = [];
NOT_NOW[-Sentinel.NotNowActualizing] = 'actualizing';
NOT_NOW[-Sentinel.NotNowTooManyUnflushed] = 'too-many-unflushed';
NOT_NOW[-Sentinel.Load] = 'needs-load';
NOT_NOW[-Sentinel.LoadMany] = 'needs-load';
