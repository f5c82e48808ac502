/**
 * An in-memory storage for the sequencer: a PLog, the sequences view and the stored next PLog
 * offset, with switches to delay, fail or hold operations for tests.
 * @module
 */

/**
 * @typedef {{ ws: number, seq: number, value: number }} SeqValue
 * @typedef {{ op: 'value', ws: number, seq: number, value: number } | { op: 'offset', offset: number }} StorageOp
 */

/** An append at an offset other than the PLog's next one. */
export class WrongOffsetError extends Error {
  /**
   * @param {number} expected the offset the PLog accepts next
   * @param {number} offered the offset that was offered
   */
  constructor(expected, offered) {
    super(`the PLog accepts offset ${expected} next, not ${offered}`);
    this.name = 'WrongOffsetError';
    /** Stable code. */
    this.code = 'WRONG_OFFSET';
    this.expected = expected;
    this.offered = offered;
  }
}

/** The error the fault switches make storage fail with. */
export class InjectedFault extends Error {
  /** @param {string} op */
  constructor(op) {
    super(`injected ${op} failure`);
    this.name = 'InjectedFault';
    this.code = 'INJECTED_FAULT';
  }
}

/**
 * The PLog, the sequences view and the next PLog offset of one partition, in memory.
 *
 * Methods answer synchronously unless `async` is set, a `delay` is given, or writes are held.
 */
export class MemoryStorage {
  /** The sequences view: workspace → sequence → last number. @type {Map<number, Map<number, number>>} */
  numbers = new Map();
  /** The stored next PLog offset (0: none stored). */
  nextOffset = 0;
  /** Every write, in the order storage applied it. @type {StorageOp[]} */
  ops = [];
  /** How many writes were applied. */
  writes = 0;
  /** Record every write in `ops` (turn off for long benchmarks). */
  recordOps = true;
  /** Fail this many of the next writes (nothing written). */
  failWrites = 0;
  /** Fail this many of the next PLog or offset reads. */
  failReads = 0;
  /** Fail this many of the next numbers reads. */
  failNumberReads = 0;
  /** How many `readNumbersMany` calls were answered. */
  manyReads = 0;
  /** Keep writes pending until `releaseWrites()`. */
  holdWrites = false;
  /** Answer every call with a Promise (settled on a later microtask). */
  async = false;
  /** Milliseconds to wait before answering each call (implies async); `null` for none. @type {(() => number) | null} */
  delay = null;

  /** PLog events by offset. @type {Map<number, SeqValue[]>} */
  #plog = new Map();
  /** PLog offsets, ascending. @type {number[]} */
  #offsets = [];
  /** @type {Array<{ values: import('./index').SeqValues, nextOffset: number, resolve: () => void, reject: (e: Error) => void }>} */
  #held = [];
  /** @type {Set<() => void>} */
  #watchers = new Set();

  /**
   * @param {{ async?: boolean, delay?: () => number }} [options]
   */
  constructor(options = {}) {
    this.async = options.async ?? false;
    this.delay = options.delay ?? null;
  }

  // ---- the PLog, as a command processor uses it ----------------------------------------------

  /**
   * Places an event at any offset, as a test's starting state.
   * @param {number} offset
   * @param {SeqValue[]} values
   */
  seedEvent(offset, values) {
    if (!this.#plog.has(offset)) {
      this.#offsets.push(offset);
      this.#offsets.sort((a, b) => a - b);
    }
    this.#plog.set(offset, values.map(({ ws, seq, value }) => ({ ws, seq, value })));
    this.#changed();
  }

  /** The offset the PLog accepts next: after its last event, or 1 when it is empty. */
  plogNext() {
    return this.#offsets.length === 0 ? 1 : this.#offsets[this.#offsets.length - 1] + 1;
  }

  /**
   * Appends an event at exactly `offset`; throws `WrongOffsetError` for any other offset.
   * @param {number} offset
   * @param {SeqValue[]} [values]
   */
  append(offset, values = []) {
    const expected = this.plogNext();
    if (offset !== expected) throw new WrongOffsetError(expected, offset);
    this.seedEvent(offset, values);
  }

  /**
   * The event at `offset`, if any.
   * @param {number} offset
   * @returns {SeqValue[] | undefined}
   */
  event(offset) {
    return this.#plog.get(offset);
  }

  /**
   * The stored number of sequence `seq` of workspace `ws` (0 if never stored).
   * @param {number} ws
   * @param {number} seq
   */
  number(ws, seq) {
    return this.numbers.get(ws)?.get(seq) ?? 0;
  }

  // ---- the storage interface the sequencer uses ----------------------------------------------

  /**
   * The stored numbers of `seqs` in workspace `ws`, 0 for a key never stored.
   * @param {number} ws
   * @param {readonly number[]} seqs
   */
  readNumbers(ws, seqs) {
    return this.#answer(() => {
      if (this.failNumberReads > 0) {
        this.failNumberReads--;
        throw new InjectedFault('readNumbers');
      }
      return seqs.map((seq) => this.number(ws, seq));
    });
  }

  /**
   * `readNumbers` for several workspaces: `seqs.length` numbers per workspace, in order.
   * @param {readonly number[]} wsList
   * @param {readonly number[]} seqs
   */
  readNumbersMany(wsList, seqs) {
    return this.#answer(() => {
      if (this.failNumberReads > 0) {
        this.failNumberReads--;
        throw new InjectedFault('readNumbersMany');
      }
      this.manyReads++;
      return Array.from(wsList).flatMap((ws) => seqs.map((seq) => this.number(ws, seq)));
    });
  }

  /** The stored next PLog offset (0 if none). */
  readNextOffset() {
    return this.#answer(() => {
      this.#readFault('readNextOffset');
      return this.nextOffset;
    });
  }

  /**
   * Writes the values, then the next PLog offset.
   * @param {import('./index').SeqValues} values
   * @param {number} nextOffset
   */
  write(values, nextOffset) {
    // Copy now: the arrays belong to the caller.
    const copy = { ws: Array.from(values.ws), seq: Array.from(values.seq), value: Array.from(values.value), length: values.length };
    if (this.failWrites > 0) {
      this.failWrites--;
      return this.#answer(() => {
        throw new InjectedFault('write');
      });
    }
    if (this.holdWrites) {
      return new Promise((resolve, reject) => {
        this.#held.push({ values: copy, nextOffset, resolve, reject });
        this.#changed();
      });
    }
    return this.#answer(() => this.#apply(copy, nextOffset));
  }

  /**
   * Up to `maxEvents` events from `from` on, as parallel arrays of their values, with the
   * offset after the last event read and whether the PLog ends there.
   * @param {number} from
   * @param {number} maxEvents
   * @returns {import('./index').PlogPage | Promise<import('./index').PlogPage>}
   */
  readPlog(from, maxEvents) {
    return this.#answer(() => {
      this.#readFault('readPlog');
      /** @type {{ offset: number[], ws: number[], seq: number[], value: number[] }} */
      const values = { offset: [], ws: [], seq: [], value: [] };
      let next = from;
      let i = this.#firstIndexAtOrAfter(from);
      for (let events = 0; i < this.#offsets.length && events < maxEvents; i++, events++) {
        const offset = this.#offsets[i];
        for (const v of /** @type {SeqValue[]} */ (this.#plog.get(offset))) {
          values.offset.push(offset);
          values.ws.push(v.ws);
          values.seq.push(v.seq);
          values.value.push(v.value);
        }
        next = offset + 1;
      }
      return { values, next, end: i >= this.#offsets.length };
    });
  }

  // ---- test switches -------------------------------------------------------------------------

  /** How many writes are held by `holdWrites`. */
  get heldWrites() {
    return this.#held.length;
  }

  /** Applies every held write, oldest first, and resolves it. */
  releaseWrites() {
    for (const w of this.#held.splice(0)) {
      this.#apply(w.values, w.nextOffset);
      w.resolve();
    }
  }

  /** Fails every held write (nothing written). */
  failHeldWrites() {
    for (const w of this.#held.splice(0)) w.reject(new InjectedFault('write'));
    this.#changed();
  }

  /**
   * Resolves once `predicate()` holds, checking now and after every change to the storage.
   * @param {() => boolean} predicate
   * @returns {Promise<void>}
   */
  waitFor(predicate) {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (predicate()) {
          this.#watchers.delete(check);
          resolve();
        }
      };
      this.#watchers.add(check);
    });
  }

  /**
   * True if no event below the stored next offset has a number the view lacks (the values
   * were written before the offset). Returns the first violation, or `null`.
   * @returns {{ offset: number, value: SeqValue } | null}
   */
  offsetAheadOfValues() {
    for (const offset of this.#offsets) {
      if (offset >= this.nextOffset) break;
      for (const v of /** @type {SeqValue[]} */ (this.#plog.get(offset))) {
        if (this.number(v.ws, v.seq) < v.value) return { offset, value: v };
      }
    }
    return null;
  }

  // ---- internals -----------------------------------------------------------------------------

  /**
   * Runs `fn` now, or later as a Promise when async, delayed or held.
   * @template T
   * @param {() => T} fn
   * @returns {T | Promise<T>}
   */
  #answer(fn) {
    if (this.delay) {
      const ms = this.delay();
      return new Promise((resolve) => setTimeout(resolve, ms)).then(fn);
    }
    if (this.async) return Promise.resolve().then(fn);
    return fn();
  }

  /** @param {string} op */
  #readFault(op) {
    if (this.failReads > 0) {
      this.failReads--;
      throw new InjectedFault(op);
    }
  }

  /**
   * @param {import('./index').SeqValues} values
   * @param {number} nextOffset
   */
  #apply(values, nextOffset) {
    for (let i = 0; i < values.length; i++) {
      const ws = values.ws[i];
      const seq = values.seq[i];
      const value = values.value[i];
      let byWs = this.numbers.get(ws);
      if (!byWs) this.numbers.set(ws, (byWs = new Map()));
      byWs.set(seq, value);
      if (this.recordOps) this.ops.push({ op: 'value', ws, seq, value });
    }
    this.nextOffset = nextOffset;
    if (this.recordOps) this.ops.push({ op: 'offset', offset: nextOffset });
    this.writes++;
    this.#changed();
  }

  /** @param {number} from */
  #firstIndexAtOrAfter(from) {
    let lo = 0;
    let hi = this.#offsets.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#offsets[mid] < from) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #changed() {
    for (const check of [...this.#watchers]) check();
  }
}
