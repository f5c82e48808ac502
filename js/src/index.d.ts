/**
 * plog-sequencer: dense, monotonic per-workspace numbers for event-sourced command processing,
 * recovered from the PLog. A Rust core compiled to WebAssembly, driven on the JS event loop.
 *
 * In a browser or a bundle, `await init()` before anything else (the API throws
 * `NotInitializedError` until then); in Node the wasm is ready at import.
 *
 * All integers are JS numbers: safe integers (≤ `Number.MAX_SAFE_INTEGER`); workspace kinds
 * and sequence ids are 0..=65535.
 *
 * Type-checks under `--strict` with `lib: ["ES2020"]`, with or without `"DOM"`.
 */

/** The instance type of the global class `K` (`URL`, `Response`, ...), or `never` without it. */
type GlobalInstance<K extends string> = typeof globalThis extends { [P in K]: { prototype: infer T } } ? T : never;

/** `WebAssembly.Module` where the lib declares it (DOM or Node's types), else `never`. */
type WasmModule = typeof globalThis extends { WebAssembly: { Module: { prototype: infer T } } } ? T : never;

/**
 * Where `init` gets the wasm: a URL or a string (fetched), a `Request`, a `Response` (streamed),
 * the bytes, or a compiled `WebAssembly.Module`.
 */
export type InitInput =
  | string
  | GlobalInstance<'URL'>
  | GlobalInstance<'Request'>
  | GlobalInstance<'Response'>
  | ArrayBuffer
  | ArrayBufferView
  | WasmModule;

/**
 * Instantiates the package's wasm; the API works once the promise resolves. Without `input`
 * the wasm is fetched from next to the package (Vite and webpack emit it and rewrite the URL;
 * with esbuild pass the URL of `plog-sequencer/sequencer_bg.wasm` from its `file` loader).
 * Idempotent: every call returns the same promise (a later `input` is ignored) until one
 * rejects; the next call then tries again. An `input` of the wrong kind rejects with
 * `InvalidArgumentError`. In Node the wasm is instantiated at import: `init` resolves at once.
 */
export declare function init(input?: InitInput | PromiseLike<InitInput>): Promise<void>;

/** The options of an error's constructor (ES2022's `ErrorOptions`, declared here for ES2020). */
export interface SequencerErrorOptions {
  /** What caused the error. */
  cause?: unknown;
}

/** A value that may be returned directly or as a Promise. */
export type MaybePromise<T> = T | PromiseLike<T>;

/** Sequences of workspaces, as parallel arrays: entry `i` is `(ws[i], seq[i]) → value[i]`. */
export interface SeqValues {
  readonly ws: ArrayLike<number>;
  readonly seq: ArrayLike<number>;
  readonly value: ArrayLike<number>;
  readonly length: number;
}

/** A run of PLog events, as parallel arrays of their values. */
export interface PlogPage {
  /**
   * The values of the events read, in offset order; an event's values share its offset and
   * may repeat a key. Events without values contribute nothing. May be omitted when empty.
   */
  values?: {
    offset: ArrayLike<number>;
    ws: ArrayLike<number>;
    seq: ArrayLike<number>;
    value: ArrayLike<number>;
  };
  /** The offset after the last event read (`from` when none was read). */
  next: number;
  /** No event exists at or after `next`. */
  end: boolean;
}

/**
 * What the sequencer persists to and recovers from. Methods may return values or Promises,
 * and may throw or reject: failures are retried with backoff (a failed `readNumbers` rejects
 * the `start` that needed it instead).
 */
export interface SeqStorage {
  /** The stored last number of each of `seqs` in workspace `ws`, in order; 0 if never stored. */
  readNumbers(ws: number, seqs: readonly number[]): MaybePromise<ArrayLike<number>>;
  /**
   * `readNumbers` for several workspaces at once: `seqs.length` numbers per workspace of `ws`,
   * workspace after workspace (a batch's cold workspaces). Optional: without it the batch calls
   * `readNumbers` once per workspace.
   */
  readNumbersMany?(ws: readonly number[], seqs: readonly number[]): MaybePromise<ArrayLike<number>>;
  /**
   * The stored next PLog offset (the WIT's `begin-read-next-offset`): what the last `write`
   * stored as `nextOffset`; 0 if none is stored. Actualization replays the PLog from it. Also
   * called, at the retry delay's rate, to probe a storage that failed while a retry waits longer
   * than that (its value then unused).
   */
  readNextOffset(): MaybePromise<number>;
  /**
   * Persists `values` (keys unique; may be empty), then `nextOffset`; the values must be
   * durable before the offset is (an offset ahead of its values would let a restart skip
   * events). Writes are applied in the order they were begun (at most one is in flight).
   * The arrays are only valid during the call: copy them if you keep them.
   *
   * `nextOffset` (the WIT's `next-plog-offset`) is the PLog offset actualization replays
   * from, inclusive: every event before it has its numbers in `values` or in earlier writes.
   * After a flush it is the offset of the last event flushed (that event is replayed again
   * after a restart, harmlessly: replay keeps the largest number), not the one after it;
   * after a replay with nothing flushed since, it is the offset after the last event read.
   */
  write(values: SeqValues, nextOffset: number): MaybePromise<void>;
  /** Up to `maxEvents` PLog events from offset `from` on. */
  readPlog(from: number, maxEvents: number): MaybePromise<PlogPage>;
}

/** A monotonic clock in milliseconds. */
export interface Clock {
  now(): number;
}

/** The clock used when none is given: `performance.now()`. */
export declare const defaultClock: Clock;

/** Construction parameters; the defaults are those of the original implementation. */
export interface SequencerParams {
  /** Per workspace kind, its sequences and the first number each hands out (≥ 1). */
  seqTypes: Record<number, Record<number, number>> | Map<number, Map<number, number>>;
  /** Above this many unflushed values `start` says "not now". Default 500. */
  maxUnflushedValues?: number;
  /** How many numbers the LRU cache keeps. Default 100 000. */
  lruCacheSize?: number;
  /** While replay is held back by unflushed values, how often it looks again. Default 5 ms. */
  batcherDelayOnOverflowMs?: number;
  /** Wait after the first failure of a storage operation. Default 500 ms. */
  retryDelayMs?: number;
  /**
   * Longest wait between retries (each failure doubles the wait). Default 10 000 ms, or
   * `retryDelayMs` when only that is given (a constant wait).
   */
  maxRetryDelayMs?: number;
  /** How much of each retry wait is drawn away at random, in percent (0..=100). Default 50. */
  retryJitterPercent?: number;
}

/** Options of `new Sequencer(...)`. */
export interface SequencerOptions {
  params: SequencerParams;
  storage: SeqStorage;
  /** Default `defaultClock`. */
  clock?: Clock;
  /** `maxEvents` asked of `storage.readPlog`. Default 256. */
  plogPageSize?: number;
  /** Called for every storage failure the sequencer retries (and for driver bugs). */
  onError?: (error: SequencerError) => void;
}

/** What the sequencer is doing. */
export type SequencerStatus = 'actualizing' | 'ready' | 'in-transaction' | 'closed';

/** Why `start` / `tryStart` returned 0, or a batch stopped early. */
export type NotNowReason = 'actualizing' | 'too-many-unflushed' | 'needs-load';

/** What `startBatch` / `flushStartBatch` numbered and staged. */
export interface BatchResult {
  /** How many events started, from the first workspace asked for on. */
  started: number;
  /** The PLog offset of the first event started (the others follow one by one). */
  firstOffset: number;
  /** Why the next event was not started, if one was not; `null` if all were. */
  notNowReason: NotNowReason | null;
  /** `seqs.length` numbers per started event, event after event, in the order asked. */
  numbers: Float64Array;
}

/**
 * A sequencer: dense, monotonic numbers per workspace, persisted through `storage` and
 * recovered from its PLog. Use: `await start(kind, ws)`, `next(seq)` per number, then
 * `flush()` once the event is in the PLog, or `actualize()` if it is not. The flusher and the
 * actualizer run on the event loop until `close()`.
 */
export declare class Sequencer {
  /** Creates a sequencer; it starts actualizing from `storage` at once. */
  constructor(options: SequencerOptions);
  /** Creates a sequencer and waits until its first actualization is done. */
  static open(options: SequencerOptions): Promise<Sequencer>;
  /** What the sequencer is doing. */
  readonly status: SequencerStatus;
  /** Why the last `start` / `tryStart` returned 0; `null` if it began a transaction. */
  readonly notNowReason: NotNowReason | null;
  /** How many numbers are held in memory, by where. */
  readonly heldNumbers: { cached: number; unflushed: number; transaction: number };
  /**
   * Begins a sequencing transaction, reading the workspace's numbers first if needed.
   * Resolves to the event's PLog offset (≥ 1), or 0 for "not now" (see `notNowReason`).
   * @throws {TransactionInProgressError | UnknownWsKindError | CleanedUpError | InvalidArgumentError | StorageError | MalformedNumbersError}
   */
  start(kind: number, ws: number): Promise<number>;
  /**
   * `start` without waiting: the offset, or 0 with `notNowReason` (`'needs-load'`: use `start`).
   * @throws {TransactionInProgressError | UnknownWsKindError | CleanedUpError | InvalidArgumentError}
   */
  tryStart(kind: number, ws: number): number;
  /**
   * `start` as far as it gets within the call: the offset (or 0, see `notNowReason`) when the
   * start completed synchronously (numbers in memory, or `storage.readNumbers` answered
   * synchronously), else `start`'s promise. A cold workspace on synchronous storage starts
   * with no promise.
   * @throws {TransactionInProgressError | UnknownWsKindError | CleanedUpError | InvalidArgumentError | StorageError | MalformedNumbersError}
   */
  startNow(kind: number, ws: number): number | Promise<number>;
  /**
   * `start`, then `next` of each of `seqs` (numbers in `out`), in one call into the core:
   * the offset, or 0 for "not now". A refused `next` drops the transaction.
   * @throws {TransactionInProgressError | UnknownWsKindError | UnknownSeqIdError | SequenceExhaustedError | UnsafeIntegerError | CleanedUpError | InvalidArgumentError | StorageError | MalformedNumbersError}
   */
  startNext(kind: number, ws: number, seqs: ArrayLike<number>, out?: Float64Array): Promise<number>;
  /**
   * `flush`, then `startNext`, in one call into the core (one call per event).
   * `NoTransactionError` / `CleanedUpError` come from the flush: nothing was done.
   * @throws {NoTransactionError | TransactionInProgressError | UnknownWsKindError | UnknownSeqIdError | SequenceExhaustedError | UnsafeIntegerError | CleanedUpError | InvalidArgumentError | StorageError | MalformedNumbersError}
   */
  flushStartNext(kind: number, ws: number, seqs: ArrayLike<number>, out?: Float64Array): Promise<number>;
  /**
   * Numbers and stages one event per workspace of `wsList`, each taking a number of each of
   * `seqs`, in one call into the core (cold workspaces are read first, together). Append the
   * started events to the PLog, then `flush()` or `flushStartBatch` completes them.
   * @throws {TransactionInProgressError | UnknownWsKindError | UnknownSeqIdError | SequenceExhaustedError | UnsafeIntegerError | CleanedUpError | InvalidArgumentError | StorageError | MalformedNumbersError}
   */
  startBatch(kind: number, wsList: ArrayLike<number>, seqs: ArrayLike<number>): Promise<BatchResult>;
  /**
   * `flush`, then `startBatch`, in one call into the core (one call per batch).
   * `NoTransactionError` / `CleanedUpError` come from the flush: nothing was done.
   * @throws {NoTransactionError | TransactionInProgressError | UnknownWsKindError | UnknownSeqIdError | SequenceExhaustedError | UnsafeIntegerError | CleanedUpError | InvalidArgumentError | StorageError | MalformedNumbersError}
   */
  flushStartBatch(kind: number, wsList: ArrayLike<number>, seqs: ArrayLike<number>): Promise<BatchResult>;
  /**
   * `StartEvent` (docs/DESIGN.md §5.1) without waiting (params from `systemParams`): the
   * offsets, or `null` for "not now" (see `notNowReason`). `EventSequencer` waits out "not now".
   * @throws {TransactionInProgressError | UnknownWsKindError | UnknownSeqIdError | CleanedUpError | InvalidArgumentError | StorageError}
   */
  startEvent(ws: number): Promise<StartedEvent | null>;
  /**
   * The next number of sequence `seq` in the transaction in progress.
   * @throws {NoTransactionError | UnknownSeqIdError | SequenceExhaustedError | UnsafeIntegerError | CleanedUpError | InvalidArgumentError}
   */
  next(seq: number): number;
  /**
   * `NextRecID` (docs/DESIGN.md §5.1).
   * @throws {NoTransactionError | UnknownSeqIdError | UnsafeIntegerError | CleanedUpError}
   */
  nextRecId(): number;
  /**
   * `NextCRecID` (docs/DESIGN.md §5.1).
   * @throws {NoTransactionError | UnknownSeqIdError | UnsafeIntegerError | CleanedUpError}
   */
  nextCRecId(): number;
  /**
   * `FinishEvent` (docs/DESIGN.md §5.1): `flush()`.
   * @throws {NoTransactionError | UnsafeIntegerError | CleanedUpError}
   */
  finishEvent(): void;
  /**
   * `CancelEvent` (docs/DESIGN.md §5.1): drops the event in progress and recovers.
   * @throws {NoTransactionError | CleanedUpError}
   */
  cancelEvent(): void;
  /** The facade's status (docs/DESIGN.md §5.3). */
  readonly sequenceStatus: SequenceStatus;
  /**
   * Ends the open event but not the transaction: the next `start` numbers another event of
   * it; `flush()` completes them all (append them to the PLog first), `actualize()` drops
   * them all.
   * @throws {NoTransactionError | UnsafeIntegerError | CleanedUpError}
   */
  stage(): void;
  /**
   * Completes the transaction (the open event and every staged one) and wakes the flusher;
   * never waits for storage.
   * @throws {NoTransactionError | UnsafeIntegerError | CleanedUpError}
   */
  flush(): void;
  /**
   * Drops the transaction in progress and everything unflushed, and re-actualizes.
   * @throws {AlreadyActualizingError | CleanedUpError}
   */
  actualize(): void;
  /** Resolves once actualization is done; rejects with `CleanedUpError` on `close()`. */
  whenReady(): Promise<void>;
  /** Resolves once everything flushed is durable and no storage work is pending. */
  whenFlushed(): Promise<void>;
  /** Stops the flusher and actualizer at once; later calls throw `CleanedUpError`. */
  close(): void;
}

// ---- the ISequence facade (docs/DESIGN.md §5) ------------------------------------------------

/** The workspace kind the facade's system sequences belong to. */
export declare const SYSTEM_KIND: 0;
/** The WLog offset of a workspace. */
export declare const SEQ_WLOG_OFFSET: 1;
/** Ids of O/W documents and records, and of argument objects. */
export declare const SEQ_REC_ID: 2;
/** Ids of C documents and records. */
export declare const SEQ_CREC_ID: 3;
/** The first WLog offset of a workspace. */
export declare const FIRST_WLOG_OFFSET: 1;
/** The register factor of the platform's record ids: `id = register × factor + base id`. */
export declare const REGISTER_FACTOR: 5000000000;
/** The first base record id handed to users. */
export declare const FIRST_USER_BASE_RECORD_ID: 131072;
/** The first O/W record id (register 64536). */
export declare const FIRST_REC_ID: 322680000131072;
/** The first C record id (register 64537). */
export declare const FIRST_CREC_ID: 322685000131072;

/**
 * `params` with the system sequences added under `SYSTEM_KIND` (WLog offset from 1, record ids
 * from `FIRST_REC_ID`, C record ids from `FIRST_CREC_ID`); other kinds and the limits are kept.
 * @throws {InvalidParamsError}
 */
export declare function systemParams(params?: Partial<SequencerParams>): SequencerParams;

/**
 * The facade's `SequenceStatus` (docs/DESIGN.md §5.3). `'none'` (not created yet) is never
 * reported by an `EventSequencer`: construction starts recovery.
 */
export type SequenceStatus = 'none' | 'recover' | 'ready' | 'eventing' | 'finished';

/**
 * A clock that may also run timers on its own time (a manual clock in tests). Without both
 * timer methods, `startEvent` waits with the global `setTimeout`, checking the clock.
 */
export interface TimerClock extends Clock {
  setTimeout?(callback: () => void, ms: number): unknown;
  clearTimeout?(handle: any): void;
}

/** Options of `new EventSequencer(...)`: those of `Sequencer`, with optional params. */
export interface EventSequencerOptions extends Omit<SequencerOptions, 'params' | 'clock'> {
  /** Limits and other kinds; the system sequences are added (`systemParams`). */
  params?: Partial<SequencerParams>;
  /** The driver's clock, also the one `startEvent` waits on. Default `defaultClock`. */
  clock?: TimerClock;
}

/** The offsets of an event `startEvent` began. */
export interface StartedEvent {
  plogOffset: number;
  wlogOffset: number;
}

/**
 * The `ISequence` facade for one partition (docs/DESIGN.md §5). Recovery starts at
 * construction; one event at a time: `startEvent`, `nextRecId` / `nextCRecId`, then
 * `finishEvent` once the event is in the PLog or `cancelEvent` if it is not (the same offsets
 * and ids are handed out again).
 */
export declare class EventSequencer {
  constructor(options: EventSequencerOptions);
  /** Creates an event sequencer and waits until its recovery is done. */
  static open(options: EventSequencerOptions): Promise<EventSequencer>;
  /** The status; readable at any time, also after `close()` (`'finished'`). */
  readonly status: SequenceStatus;
  /** The driver underneath (diagnostics). */
  readonly sequencer: Sequencer;
  /**
   * Begins an event in workspace `ws`. While recovering (or while too many values wait to be
   * flushed) waits up to `waitMs` on the clock; `null` ("not now") if that does not end in
   * time or the sequencer is closed meanwhile.
   * @throws {TransactionInProgressError | CleanedUpError | InvalidArgumentError | StorageError | UnsafeIntegerError}
   */
  startEvent(waitMs: number, ws: number): Promise<StartedEvent | null>;
  /**
   * The next O/W document or record id (also for argument objects) of the event's workspace.
   * @throws {NoTransactionError | UnsafeIntegerError | CleanedUpError}
   */
  nextRecId(): number;
  /**
   * The next C document or record id of the event's workspace.
   * @throws {NoTransactionError | UnsafeIntegerError | CleanedUpError}
   */
  nextCRecId(): number;
  /**
   * The event is in the PLog: its numbers are flushed in the background.
   * @throws {NoTransactionError | CleanedUpError}
   */
  finishEvent(): void;
  /**
   * The event failed: recover, then hand out the same offsets and ids again.
   * @throws {NoTransactionError | CleanedUpError}
   */
  cancelEvent(): void;
  /** Resolves once recovery is done; rejects with `CleanedUpError` on `close()`. */
  whenReady(): Promise<void>;
  /** Resolves once every finished event's numbers are durable. */
  whenFlushed(): Promise<void>;
  /** Stops at once; unflushed numbers are dropped. Idempotent. */
  close(): void;
}

/** The kind of a record an event creates. */
export type RecordKind = 'CDoc' | 'CRecord' | 'ODoc' | 'ORecord' | 'WDoc' | 'WRecord';

/** An object of an event's argument, with its children. */
export interface ArgObject {
  id: number;
  children?: readonly ArgObject[];
}

/** What recovery needs of a platform PLog event. */
export interface PlatformEvent {
  ws: number;
  /** The event's WLog offset in its workspace. */
  wlogOffset: number;
  /** The records the event creates. */
  newRecords?: readonly { kind: RecordKind; id: number }[];
  /** The argument object, if any. */
  argument?: ArgObject | null;
}

/**
 * The sequence values a platform PLog event carries (WLog offset; C records raise the C record
 * id; O/W records, the argument object and its descendants raise the record id), in the shape
 * `MemoryStorage.append` / `seedEvent` take. Keys may repeat.
 * @throws {InvalidArgumentError}
 */
export declare function eventValues(event: PlatformEvent): SeqValue[];

/** Stable error codes, one per error class. */
export type ErrorCode =
  | 'INVALID_PARAMS'
  | 'CLEANED_UP'
  | 'TRANSACTION_IN_PROGRESS'
  | 'NO_TRANSACTION'
  | 'UNKNOWN_WS_KIND'
  | 'UNKNOWN_SEQ_ID'
  | 'ALREADY_ACTUALIZING'
  | 'SEQUENCE_EXHAUSTED'
  | 'UNKNOWN_TICKET'
  | 'WRONG_RESULT_KIND'
  | 'MALFORMED_NUMBERS'
  | 'MALFORMED_PLOG_PAGE'
  | 'INVALID_ARGUMENT'
  | 'UNSAFE_INTEGER'
  | 'STORAGE'
  | 'NOT_INITIALIZED';

/** The base class of every error the sequencer raises. */
export declare class SequencerError extends Error {
  constructor(code: string, message: string, options?: SequencerErrorOptions);
  /** Stable across releases. */
  readonly code: ErrorCode | string;
  /** What caused the error, if anything did (a `StorageError`'s storage failure). */
  cause?: unknown;
}

/** A subclass of `SequencerError` with a fixed code. */
export interface CodedErrorClass<C extends ErrorCode> {
  new (message?: string, options?: SequencerErrorOptions): SequencerError & { readonly code: C };
  readonly code: C;
}

/** The params given at construction are invalid. */
export declare const InvalidParamsError: CodedErrorClass<'INVALID_PARAMS'>;
export type InvalidParamsError = InstanceType<typeof InvalidParamsError>;
/** The sequencer was closed. */
export declare const CleanedUpError: CodedErrorClass<'CLEANED_UP'>;
export type CleanedUpError = InstanceType<typeof CleanedUpError>;
/** `start` while a transaction (or a start waiting for storage) is in progress. */
export declare const TransactionInProgressError: CodedErrorClass<'TRANSACTION_IN_PROGRESS'>;
export type TransactionInProgressError = InstanceType<typeof TransactionInProgressError>;
/** `next` or `flush` without a transaction. */
export declare const NoTransactionError: CodedErrorClass<'NO_TRANSACTION'>;
export type NoTransactionError = InstanceType<typeof NoTransactionError>;
/** `start` for an undefined workspace kind. */
export declare const UnknownWsKindError: CodedErrorClass<'UNKNOWN_WS_KIND'>;
export type UnknownWsKindError = InstanceType<typeof UnknownWsKindError>;
/** `next` for a sequence the workspace kind does not define. */
export declare const UnknownSeqIdError: CodedErrorClass<'UNKNOWN_SEQ_ID'>;
export type UnknownSeqIdError = InstanceType<typeof UnknownSeqIdError>;
/** `actualize` while actualizing. */
export declare const AlreadyActualizingError: CodedErrorClass<'ALREADY_ACTUALIZING'>;
export type AlreadyActualizingError = InstanceType<typeof AlreadyActualizingError>;
/** A sequence reached the largest number there is. */
export declare const SequenceExhaustedError: CodedErrorClass<'SEQUENCE_EXHAUSTED'>;
export type SequenceExhaustedError = InstanceType<typeof SequenceExhaustedError>;
/** A storage outcome for work the core is not waiting for (a driver bug). */
export declare const UnknownTicketError: CodedErrorClass<'UNKNOWN_TICKET'>;
export type UnknownTicketError = InstanceType<typeof UnknownTicketError>;
/** A storage outcome of the wrong kind (a driver bug). */
export declare const WrongResultKindError: CodedErrorClass<'WRONG_RESULT_KIND'>;
export type WrongResultKindError = InstanceType<typeof WrongResultKindError>;
/** `readNumbers` returned the wrong count of numbers. */
export declare const MalformedNumbersError: CodedErrorClass<'MALFORMED_NUMBERS'>;
export type MalformedNumbersError = InstanceType<typeof MalformedNumbersError>;
/** `readPlog` returned a page that breaks its contract. */
export declare const MalformedPlogPageError: CodedErrorClass<'MALFORMED_PLOG_PAGE'>;
export type MalformedPlogPageError = InstanceType<typeof MalformedPlogPageError>;
/** An argument or stored number is not an integer in range. */
export declare const InvalidArgumentError: CodedErrorClass<'INVALID_ARGUMENT'>;
export type InvalidArgumentError = InstanceType<typeof InvalidArgumentError>;
/** A number would exceed `Number.MAX_SAFE_INTEGER`; actualize the transaction. */
export declare const UnsafeIntegerError: CodedErrorClass<'UNSAFE_INTEGER'>;
export type UnsafeIntegerError = InstanceType<typeof UnsafeIntegerError>;

/** The wasm is not instantiated yet: `await init()` first (browsers and bundles). */
export declare const NotInitializedError: CodedErrorClass<'NOT_INITIALIZED'>;
export type NotInitializedError = InstanceType<typeof NotInitializedError>;

/** A storage method threw or rejected; the original error is `cause`. */
export declare class StorageError extends SequencerError {
  static readonly code: 'STORAGE';
  constructor(op: string, cause: unknown);
  readonly code: 'STORAGE';
  /** The storage method: `'readNumbers' | 'readNextOffset' | 'write' | 'readPlog'`. */
  readonly op: string;
}

/** Every coded error class by its code. */
export declare const errorClasses: Readonly<Record<Exclude<ErrorCode, 'STORAGE'>, CodedErrorClass<ErrorCode>>>;

/** The error for a refusal reported by the wasm core. */
export declare function errorFrom(source: { errorCode(): string; errorMessage(): string }): SequencerError;

/** A sequence value, as the PLog holds it. */
export interface SeqValue {
  ws: number;
  seq: number;
  value: number;
}

/** One write the memory storage applied. */
export type StorageOp =
  | { op: 'value'; ws: number; seq: number; value: number }
  | { op: 'offset'; offset: number };

/** An append at an offset other than the PLog's next one. */
export declare class WrongOffsetError extends Error {
  constructor(expected: number, offered: number);
  readonly code: 'WRONG_OFFSET';
  readonly expected: number;
  readonly offered: number;
}

/** The error the memory storage's fault switches fail with. */
export declare class InjectedFault extends Error {
  constructor(op: string);
  readonly code: 'INJECTED_FAULT';
}

/**
 * The PLog, the sequences view and the next PLog offset of one partition, in memory, with
 * switches to delay, fail or hold operations. Synchronous unless `async`, `delay` or
 * `holdWrites` is set.
 */
export declare class MemoryStorage implements SeqStorage {
  constructor(options?: { async?: boolean; delay?: () => number });
  /** The sequences view: workspace → sequence → last number. */
  numbers: Map<number, Map<number, number>>;
  /** What the last write stored as `nextOffset` (see `SeqStorage.write`); 0: none. */
  nextOffset: number;
  /** Every write applied, in order (while `recordOps`). */
  ops: StorageOp[];
  /** How many writes were applied. */
  writes: number;
  /** Record writes in `ops`. Default true. */
  recordOps: boolean;
  /** Fail this many of the next writes. */
  failWrites: number;
  /** Fail this many of the next PLog or offset reads. */
  failReads: number;
  /** Fail this many of the next numbers reads. */
  failNumberReads: number;
  /** Keep writes pending until `releaseWrites()`. */
  holdWrites: boolean;
  /** Answer every call with a Promise. */
  async: boolean;
  /** Milliseconds to wait before answering each call; `null` for none. */
  delay: (() => number) | null;
  /** Places an event at any offset (a test's starting state). */
  seedEvent(offset: number, values: SeqValue[]): void;
  /** The offset the PLog accepts next (1 when empty). */
  plogNext(): number;
  /** Appends an event at exactly `offset`; throws `WrongOffsetError` otherwise. */
  append(offset: number, values?: SeqValue[]): void;
  /** The event at `offset`, if any. */
  event(offset: number): SeqValue[] | undefined;
  /** The stored number of `(ws, seq)`, 0 if never stored. */
  number(ws: number, seq: number): number;
  readNumbers(ws: number, seqs: readonly number[]): MaybePromise<number[]>;
  readNumbersMany(ws: readonly number[], seqs: readonly number[]): MaybePromise<number[]>;
  /** How many `readNumbersMany` calls were answered. */
  manyReads: number;
  readNextOffset(): MaybePromise<number>;
  write(values: SeqValues, nextOffset: number): MaybePromise<void>;
  readPlog(from: number, maxEvents: number): MaybePromise<PlogPage>;
  /** How many writes `holdWrites` holds. */
  readonly heldWrites: number;
  /** Applies every held write, oldest first. */
  releaseWrites(): void;
  /** Fails every held write. */
  failHeldWrites(): void;
  /** Resolves once `predicate()` holds, checked after every storage change. */
  waitFor(predicate: () => boolean): Promise<void>;
  /** The first event below the stored next offset whose number the view lacks, or `null`. */
  offsetAheadOfValues(): { offset: number; value: SeqValue } | null;
}
