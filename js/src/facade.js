/**
 * The `ISequence` facade for command processors (docs/DESIGN.md §5): start an event, take
 * record ids, finish or cancel it; over the driver (`Sequencer`) and the platform's system
 * sequences. Also the storage adapter's half: the sequence values a platform PLog event
 * carries.
 *
 * Every rule is the wasm core's (`src/facade.rs` and the shell): the constants, the system
 * params, `startEvent` and the record kinds come from the wasm module; this file waits and
 * converts.
 * @module
 */

import { recordSeq } from '../pkg/sequencer.js';
import { InvalidArgumentError, InvalidParamsError, TransactionInProgressError } from './errors.js';
import { toCoreParams } from './params.js';
import { defaultClock, Sequencer } from './sequencer.js';
import { requireWasm } from './wasm.js';

// The core's constants (`src/facade.rs`), written out so that they exist before the wasm is
// instantiated; test/vocabulary.test.js checks them against the wasm's `facadeConstants()`.

/** The workspace kind the facade's system sequences belong to. */
export const SYSTEM_KIND = 0;
/** The WLog offset of a workspace. */
export const SEQ_WLOG_OFFSET = 1;
/** Ids of O/W documents and records, and of argument objects. */
export const SEQ_REC_ID = 2;
/** Ids of C documents and records. */
export const SEQ_CREC_ID = 3;
/** The first WLog offset of a workspace. */
export const FIRST_WLOG_OFFSET = 1;
/** The register factor of the platform's record ids: `id = register × factor + base id`. */
export const REGISTER_FACTOR = 5_000_000_000;
/** The first base record id handed to users. */
export const FIRST_USER_BASE_RECORD_ID = 131_072;
/** The first O/W record id (register 64536): 322680000131072. */
export const FIRST_REC_ID = 64_536 * REGISTER_FACTOR + FIRST_USER_BASE_RECORD_ID;
/** The first C record id (register 64537): 322685000131072. */
export const FIRST_CREC_ID = 64_537 * REGISTER_FACTOR + FIRST_USER_BASE_RECORD_ID;

/**
 * `params` with the system sequences added under `SYSTEM_KIND` (they replace sequences 1..3 of
 * kind 0 if given; other kinds, sequences and limits are kept), by the core's rule. Returns a
 * new object; `seqTypes` keeps its shape (a `Map` of `Map`s stays one).
 * @param {Partial<import('./index').SequencerParams>} [params]
 * @returns {import('./index').SequencerParams}
 */
export function systemParams(params = {}) {
  requireWasm('systemParams()');
  if (params === null || typeof params !== 'object') {
    throw new InvalidParamsError('params must be an object');
  }
  const types = params.seqTypes;
  if (types !== undefined && (types === null || typeof types !== 'object')) {
    throw new InvalidParamsError('params.seqTypes must be an object or a Map: kind -> { seq: initial }');
  }
  const core = toCoreParams({ seqTypes: types ?? {} }, false);
  let flat;
  try {
    core.addSystemSequences();
    flat = core.seqTypes();
  } finally {
    core.free();
  }
  const asMap = types instanceof Map;
  /** @type {Map<number, Map<number, number>>} */
  const byKind = new Map();
  for (let i = 0; i < flat.length; i += 3) {
    const [kind, seq, initial] = [flat[i], flat[i + 1], flat[i + 2]];
    if (!byKind.has(kind)) byKind.set(kind, new Map());
    /** @type {Map<number, number>} */ (byKind.get(kind)).set(seq, initial);
  }
  const seqTypes = asMap
    ? byKind
    : Object.fromEntries([...byKind].map(([k, seqs]) => [k, Object.fromEntries(seqs)]));
  return { ...params, seqTypes };
}

/**
 * A timer on `clock` that fires once `clock.now()` reaches `deadline`. Uses the clock's own
 * `setTimeout` / `clearTimeout` when it has both (a manual clock in tests); otherwise the
 * global timer, re-armed until the clock has really reached the deadline.
 * @param {import('./index').TimerClock} clock
 * @param {number} deadline
 * @param {() => void} fire
 * @returns {() => void} cancels the timer
 */
function timerAt(clock, deadline, fire) {
  const own = typeof clock.setTimeout === 'function' && typeof clock.clearTimeout === 'function';
  /** @type {unknown} */
  let handle;
  let cancelled = false;
  const arm = () => {
    if (cancelled) return;
    const remaining = deadline - clock.now();
    if (remaining <= 0) {
      fire();
      return;
    }
    if (!Number.isFinite(remaining)) return; // waits forever: no timer
    handle = own
      ? /** @type {Required<import('./index').TimerClock>} */ (clock).setTimeout(arm, remaining)
      : setTimeout(arm, Math.min(Math.ceil(remaining), 2 ** 31 - 1));
  };
  arm();
  return () => {
    cancelled = true;
    if (handle === undefined) return;
    if (own) /** @type {Required<import('./index').TimerClock>} */ (clock).clearTimeout(handle);
    else clearTimeout(/** @type {any} */ (handle));
  };
}

/**
 * The `ISequence` facade for one partition (docs/DESIGN.md §5.1): a command processor starts
 * an event in a workspace (its PLog and WLog offsets), takes record ids, then finishes the event
 * once it is in the PLog or cancels it (recovery; the same offsets and ids are handed out again).
 *
 * Recovery starts at construction. One event at a time; misuse throws the package's coded
 * errors (`TRANSACTION_IN_PROGRESS`, `NO_TRANSACTION`, `CLEANED_UP`, ...).
 */
export class EventSequencer {
  /** @type {Sequencer} */ #driver;
  /** @type {import('./index').TimerClock} */ #clock;
  /** A `startEvent` is under way. */
  #starting = false;
  /** The driver's `whenReady()` / `whenFlushed()`, shared by every wait until it settles. */
  /** @type {Promise<void> | null} */ #ready = null;
  /** @type {Promise<void> | null} */ #flushed = null;

  /**
   * Creates the sequencer (the driver with `systemParams(params)`) and starts recovery at once.
   * @param {import('./index').EventSequencerOptions} options
   */
  constructor(options) {
    requireWasm('new EventSequencer()');
    const { params, clock = defaultClock, ...rest } = options ?? /** @type {any} */ ({});
    if (typeof clock?.now !== 'function') throw new InvalidArgumentError('clock.now must be a function');
    this.#clock = clock;
    this.#driver = new Sequencer({ ...rest, clock, params: systemParams(params) });
  }

  /**
   * Creates an event sequencer and waits until its recovery is done.
   * @param {import('./index').EventSequencerOptions} options
   * @returns {Promise<EventSequencer>}
   */
  static async open(options) {
    const s = new EventSequencer(options);
    await s.#driver.whenReady();
    return s;
  }

  /**
   * `Status` (docs/DESIGN.md §5.3): `'recover' | 'ready' | 'eventing' | 'finished'` (`'none'`
   * never here).
   */
  get status() {
    return this.#driver.sequenceStatus;
  }

  /** The driver underneath (diagnostics: `heldNumbers`, `notNowReason`). */
  get sequencer() {
    return this.#driver;
  }

  /**
   * `StartEvent(wait, ws)`: begins an event in workspace `ws` and returns its PLog offset and
   * the workspace's WLog offset. While recovery runs (or too many values wait to be flushed)
   * it waits up to `waitMs` on the clock for that to end, without polling; resolves to `null`
   * ("not now") if it does not, or if the sequencer is closed meanwhile. `waitMs` bounds that
   * wait only, not the read of the workspace's numbers from storage.
   * @param {number} waitMs milliseconds on the clock, ≥ 0 (`Infinity`: as long as it takes)
   * @param {number} ws
   * @returns {Promise<import('./index').StartedEvent | null>}
   */
  async startEvent(waitMs, ws) {
    if (typeof waitMs !== 'number' || !(waitMs >= 0)) {
      throw new InvalidArgumentError(`waitMs must be a number >= 0, got ${waitMs}`);
    }
    if (this.#starting) throw new TransactionInProgressError('a startEvent is under way');
    const driver = this.#driver;
    const deadline = this.#clock.now() + waitMs;
    this.#starting = true;
    try {
      for (;;) {
        const started = await driver.startEvent(ws);
        if (started !== null) return started;
        if (this.#clock.now() >= deadline) return null;
        const until = driver.notNowReason === 'actualizing' ? this.#whenReady() : this.#whenFlushed();
        if (!(await this.#waitUntil(until, deadline))) return null;
      }
    } finally {
      this.#starting = false;
    }
  }

  /**
   * `NextRecID`: the next O/W document or record id (or argument object id) of the event's
   * workspace. Throws `NoTransactionError` without an event.
   * @returns {number}
   */
  nextRecId() {
    return this.#driver.nextRecId();
  }

  /**
   * `NextCRecID`: the next C document or record id of the event's workspace. Throws
   * `NoTransactionError` without an event.
   * @returns {number}
   */
  nextCRecId() {
    return this.#driver.nextCRecId();
  }

  /**
   * `FinishEvent`: the event is in the PLog; its numbers are flushed in the background. Throws
   * `NoTransactionError` without an event.
   */
  finishEvent() {
    this.#driver.finishEvent();
  }

  /**
   * `CancelEvent`: the event failed; recovery runs (status `'recover'`), then the same offsets
   * and ids are handed out again. Throws `NoTransactionError` without an event.
   */
  cancelEvent() {
    this.#driver.cancelEvent();
  }

  /**
   * Resolves once recovery is done; rejects with `CleanedUpError` on `close()`.
   * @returns {Promise<void>}
   */
  whenReady() {
    return this.#driver.whenReady();
  }

  /**
   * Resolves once every finished event's numbers are durable in storage.
   * @returns {Promise<void>}
   */
  whenFlushed() {
    return this.#driver.whenFlushed();
  }

  /**
   * Stops at once (status `'finished'`): unflushed numbers are dropped (`await whenFlushed()`
   * first to keep them), a waiting `startEvent` resolves to `null`, later calls throw
   * `CleanedUpError`. Idempotent.
   */
  close() {
    this.#driver.close();
  }

  // ---- waiting ---------------------------------------------------------------------------------

  /** @returns {Promise<void>} */
  #whenReady() {
    if (this.#ready === null) {
      const p = this.#driver.whenReady();
      const clear = () => {
        if (this.#ready === p) this.#ready = null;
      };
      p.then(clear, clear);
      this.#ready = p;
    }
    return this.#ready;
  }

  /** @returns {Promise<void>} */
  #whenFlushed() {
    if (this.#flushed === null) {
      const p = this.#driver.whenFlushed();
      const clear = () => {
        if (this.#flushed === p) this.#flushed = null;
      };
      p.then(clear, clear);
      this.#flushed = p;
    }
    return this.#flushed;
  }

  /**
   * True once `condition` resolves, false when the clock reaches `deadline` first or the
   * sequencer is closed (the condition rejects).
   * @param {Promise<void>} condition
   * @param {number} deadline
   * @returns {Promise<boolean>}
   */
  #waitUntil(condition, deadline) {
    return new Promise((resolve) => {
      let settled = false;
      let cancel = () => {};
      /** @param {boolean} ok */
      const settle = (ok) => {
        if (settled) return;
        settled = true;
        cancel();
        resolve(ok);
      };
      condition.then(
        () => settle(true),
        () => settle(false),
      );
      if (!settled) cancel = timerAt(this.#clock, deadline, () => settle(false));
    });
  }
}

/**
 * @param {string} what
 * @param {unknown} x
 * @returns {number}
 */
function safe(what, x) {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) {
    throw new InvalidArgumentError(`${what} must be an integer in 0..=Number.MAX_SAFE_INTEGER, got ${String(x)}`);
  }
  return x;
}

/**
 * The sequence values a platform PLog event carries, as recovery reads them (docs/DESIGN.md
 * §5.4): its WLog offset; C documents and records raise the C record id; O/W documents and
 * records raise the record id; the argument object and all its descendants raise the record
 * id. Keys may repeat. The result is what `MemoryStorage.append` / `seedEvent` take (and what
 * a storage's `readPlog` returns per event).
 * @param {import('./index').PlatformEvent} event
 * @returns {import('./index').SeqValue[]}
 */
export function eventValues(event) {
  requireWasm('eventValues()');
  if (event === null || typeof event !== 'object') throw new InvalidArgumentError('event must be an object');
  const ws = safe('event.ws', event.ws);
  /** @type {import('./index').SeqValue[]} */
  const values = [{ ws, seq: SEQ_WLOG_OFFSET, value: safe('event.wlogOffset', event.wlogOffset) }];
  const records = event.newRecords ?? [];
  if (!Array.isArray(records)) throw new InvalidArgumentError('event.newRecords must be an array');
  for (const r of records) {
    const seq = typeof r?.kind === 'string' ? recordSeq(r.kind) : -1;
    if (seq < 0) {
      throw new InvalidArgumentError(
        `record kind must be one of CDoc, CRecord, ODoc, ORecord, WDoc, WRecord, got ${String(r?.kind)}`,
      );
    }
    values.push({ ws, seq, value: safe('record id', r.id) });
  }
  if (event.argument != null) {
    // Depth first, in order, without recursion; an object met twice (a cycle) is refused.
    const seen = new Set();
    /** @type {unknown[]} */
    const stack = [event.argument];
    while (stack.length > 0) {
      const obj = /** @type {import('./index').ArgObject} */ (stack.pop());
      if (obj === null || typeof obj !== 'object') throw new InvalidArgumentError('argument objects must be objects');
      if (seen.has(obj)) throw new InvalidArgumentError('an argument object appears twice in the tree');
      seen.add(obj);
      values.push({ ws, seq: SEQ_REC_ID, value: safe('argument object id', obj.id) });
      const children = obj.children ?? [];
      if (!Array.isArray(children)) throw new InvalidArgumentError('argument children must be an array');
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
    }
  }
  return values;
}
