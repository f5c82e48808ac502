/**
 * The JavaScript driver: the wasm core plus its flusher and actualizer on the JS event loop.
 * @module
 */

import { SequencerCore } from '../pkg/sequencer.js';
import {
  CleanedUpError,
  errorFrom,
  InvalidArgumentError,
  StorageError,
  TransactionInProgressError,
} from './errors.js';
import { toCoreParams } from './params.js';

// Sentinels of the core (mirrors of the constants in src/js.rs).
const ERR = -1;
const START_NOT_NOW_ACTUALIZING = -2;
const START_NOT_NOW_TOO_MANY_UNFLUSHED = -3;
const START_LOAD = -4;
const WORK_NONE = 0;
const WORK_WRITE = 1;
const WORK_READ_NEXT_OFFSET = 2;
const WORK_READ_PLOG = 3;
const STATUS = /** @type {const} */ (['actualizing', 'ready', 'in-transaction', 'closed']);

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
 * PLog, or `actualize()` if it is not. The flusher and the actualizer run on the event loop
 * until `close()`.
 */
export class Sequencer {
  /** @type {SequencerCore} */ #core;
  /** @type {import('./index').SeqStorage} */ #storage;
  /** @type {import('./index').Clock} */ #clock;
  /** @type {number} */ #pageSize;
  /** @type {(err: import('./errors.js').SequencerError) => void} */ #onError;
  #closed = false;
  /** A pump is queued. */
  #kicked = false;
  /** Storage operations of the flusher and the actualizer awaiting their outcome. */
  #inFlight = 0;
  /** A start waits for `storage.readNumbers`. */
  #starting = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */ #timer = undefined;
  #timerAt = -1;
  /** @type {import('./index').NotNowReason | null} */ #notNowReason = null;
  /** @type {Array<{ resolve: () => void, reject: (e: Error) => void }>} */ #readyWaiters = [];
  /** @type {Array<{ resolve: () => void, reject: (e: Error) => void }>} */ #flushedWaiters = [];
  #pumpNow = () => this.#pump();
  #onTimer = () => {
    this.#timer = undefined;
    this.#timerAt = -1;
    this.#pump();
  };

  /**
   * Creates a sequencer; it starts actualizing from `storage` at once (in a macrotask).
   * Throws `InvalidParamsError` / `InvalidArgumentError` for invalid params.
   * @param {import('./index').SequencerOptions} options
   */
  constructor(options) {
    const { params, storage, clock = defaultClock, plogPageSize = 256, onError } = options ?? {};
    for (const m of ['readNumbers', 'readNextOffset', 'write', 'readPlog']) {
      if (typeof storage?.[m] !== 'function') {
        throw new InvalidArgumentError(`storage.${m} must be a function`);
      }
    }
    if (typeof clock?.now !== 'function') throw new InvalidArgumentError('clock.now must be a function');
    if (!Number.isSafeInteger(plogPageSize) || plogPageSize < 1) {
      throw new InvalidArgumentError(`plogPageSize must be a positive integer, got ${plogPageSize}`);
    }
    const coreParams = toCoreParams(params);
    try {
      this.#core = new SequencerCore(coreParams);
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
    return STATUS[this.#core.status()];
  }

  /** Why the last `start` / `tryStart` returned 0, or `null` if it began a transaction. */
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
    if (this.#starting) throw new TransactionInProgressError('a start is waiting for storage');
    let r = this.#core.start(kind, ws);
    while (r === START_LOAD) {
      r = await this.#load(ws);
      if (r === START_LOAD) r = this.#core.start(kind, ws); // the read was superseded
    }
    return this.#started(r);
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
    if (this.#starting) throw new TransactionInProgressError('a start is waiting for storage');
    const r = this.#core.start(kind, ws);
    if (r > 0) {
      this.#notNowReason = null;
      return r;
    }
    if (r === START_LOAD) {
      this.#notNowReason = 'needs-load';
      return 0;
    }
    return this.#started(r);
  }

  /**
   * The next number of sequence `seq` in the transaction in progress.
   * @param {number} seq
   * @returns {number}
   */
  next(seq) {
    const n = this.#core.next(seq);
    if (n < 0) throw errorFrom(this.#core);
    return n;
  }

  /**
   * Ends the open event but not the transaction: its offset and numbers are taken and the
   * next `start` numbers another event of the same transaction. Staged events reach storage
   * only after `flush()` (append them all to the PLog first); `actualize()` drops them all.
   */
  stage() {
    if (this.#core.stage() === ERR) throw errorFrom(this.#core);
  }

  /**
   * Completes the transaction in progress (its event is in the PLog) and wakes the flusher.
   * Never waits for storage.
   */
  flush() {
    if (this.#core.flush() === ERR) throw errorFrom(this.#core);
    this.#kick();
  }

  /**
   * Drops the transaction in progress, if any, and everything not yet written, and
   * re-actualizes from storage; `start` says "not now" until that is done, then hands out the
   * same offset and numbers again.
   */
  actualize() {
    if (this.#core.actualize() === ERR) throw errorFrom(this.#core);
    this.#kick();
  }

  /**
   * Resolves once actualization is done (at once if it is); rejects with `CleanedUpError` if
   * the sequencer is closed first.
   * @returns {Promise<void>}
   */
  whenReady() {
    if (this.#closed) return Promise.reject(new CleanedUpError('the sequencer was closed'));
    if (this.#core.status() !== 0) return Promise.resolve();
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

  // ---- transactions -------------------------------------------------------------------------

  /**
   * Performs the numbers read the core asked for and reports it.
   * @param {number} ws
   * @returns {Promise<number>} the core's start result (`START_LOAD` if superseded)
   */
  async #load(ws) {
    const core = this.#core;
    const ticket = core.loadTicket();
    const seqs = Array.from(core.loadSeqs());
    let numbers;
    this.#starting = true;
    try {
      numbers = await this.#storage.readNumbers(ws, seqs);
    } catch (cause) {
      if (this.#closed) throw new CleanedUpError('the sequencer was closed', { cause });
      core.fail(ticket, this.#clock.now()); // abandons the read; refused if superseded
      throw new StorageError('readNumbers', cause);
    } finally {
      this.#starting = false;
    }
    if (this.#closed) throw new CleanedUpError('the sequencer was closed');
    let r;
    try {
      r = core.completeNumbers(ticket, numbers);
    } catch (cause) {
      // Not an array of numbers at all.
      core.fail(ticket, this.#clock.now());
      throw new InvalidArgumentError('storage.readNumbers must return an array of numbers', { cause });
    }
    if (r !== ERR) return r;
    const err = errorFrom(core);
    if (err.code === 'UNKNOWN_TICKET') return START_LOAD; // superseded by actualize
    core.fail(ticket, this.#clock.now());
    throw err;
  }

  /**
   * Maps a core start result to the offset or 0, throwing refusals.
   * @param {number} r
   * @returns {number}
   */
  #started(r) {
    if (r > 0) {
      this.#notNowReason = null;
      return r;
    }
    if (r === START_NOT_NOW_ACTUALIZING) this.#notNowReason = 'actualizing';
    else if (r === START_NOT_NOW_TOO_MANY_UNFLUSHED) this.#notNowReason = 'too-many-unflushed';
    else throw errorFrom(this.#core);
    return 0;
  }

  // ---- the task loop: flusher and actualizer ------------------------------------------------

  /** Queues a pump as a macrotask (once): it runs after the current turn's transactions. */
  #kick() {
    if (this.#kicked || this.#closed) return;
    this.#kicked = true;
    soon(this.#pumpNow);
  }

  /** Performs all work due now, then arms the timer for the next due instant. */
  #pump() {
    this.#kicked = false;
    if (this.#closed) return;
    const core = this.#core;
    for (;;) {
      const now = this.#clock.now();
      const kind = core.pollWork(now);
      if (kind === WORK_NONE) break;
      this.#perform(kind);
      if (this.#closed) return;
    }
    this.#arm();
    this.#notify();
  }

  /**
   * Starts the storage operation for the polled work; its outcome is reported when it settles.
   * @param {number} kind
   */
  #perform(kind) {
    const core = this.#core;
    const ticket = core.workTicket();
    const storage = this.#storage;
    switch (kind) {
      case WORK_WRITE: {
        const flat = core.workValues();
        const n = flat.length / 3;
        const values = { ws: flat.subarray(0, n), seq: flat.subarray(n, 2 * n), value: flat.subarray(2 * n), length: n };
        const nextOffset = core.workNextOffset();
        this.#run('write', ticket, () => storage.write(values, nextOffset), () => core.completeWrite(ticket));
        break;
      }
      case WORK_READ_NEXT_OFFSET:
        this.#run('readNextOffset', ticket, () => storage.readNextOffset(), (offset) =>
          core.completeNextOffset(ticket, Number(offset ?? 0)),
        );
        break;
      case WORK_READ_PLOG: {
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
   * @param {(result: any) => number} report returns the core's status (`ERR` if refused)
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
        if (report(value) !== ERR) return;
        error = errorFrom(core); // storage returned something the core refused
      } catch (e) {
        error = new InvalidArgumentError(`storage.${op} returned an unusable result`, { cause: e });
      }
    } else {
      error = new StorageError(op, cause);
    }
    if (core.fail(ticket, this.#clock.now()) === ERR) {
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
      this.#clock.now(),
    );
  }

  /** Sets the timer to the core's next due instant, if any. */
  #arm() {
    const at = this.#core.pollTimeout();
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
    return !this.#kicked && this.#inFlight === 0 && this.#core.pollTimeout() < 0;
  }

  /** Resolves the waiters whose condition holds. */
  #notify() {
    if (this.#readyWaiters.length > 0 && this.#core.status() !== 0) {
      for (const w of this.#readyWaiters.splice(0)) w.resolve();
    }
    if (this.#flushedWaiters.length > 0 && this.#idle()) {
      for (const w of this.#flushedWaiters.splice(0)) w.resolve();
    }
  }
}
