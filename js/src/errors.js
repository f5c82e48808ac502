/**
 * Errors of the sequencer: one `SequencerError` subclass per stable `code`.
 *
 * Every refusal of the core (a misuse, a malformed storage result) and every storage failure
 * surfaces as one of these, so callers can branch on `err.code` or on `instanceof`.
 *
 * @module
 */

/** The base class of every error the sequencer raises; `code` is stable across releases. */
export class SequencerError extends Error {
  /**
   * @param {string} code stable error code, e.g. `"NO_TRANSACTION"`
   * @param {string} message human-readable description
   * @param {ErrorOptions} [options] `{ cause }`
   */
  constructor(code, message, options) {
    super(message, options);
    /** @type {string} */
    this.code = code;
  }

  get name() {
    return this.constructor.name;
  }
}

/**
 * Defines a subclass of `SequencerError` with a fixed code.
 * @param {string} name class name
 * @param {string} code stable error code
 */
function coded(name, code) {
  const cls = {
    [name]: class extends SequencerError {
      /**
       * @param {string} [message]
       * @param {ErrorOptions} [options]
       */
      constructor(message = code, options) {
        super(code, message, options);
      }
    },
  }[name];
  Object.defineProperty(cls, 'code', { value: code });
  return cls;
}

/** The params given at construction are invalid. */
export const InvalidParamsError = coded('InvalidParamsError', 'INVALID_PARAMS');
/** The sequencer was closed; it accepts no further calls. */
export const CleanedUpError = coded('CleanedUpError', 'CLEANED_UP');
/** `start` while a transaction (or a start waiting for storage) is in progress. */
export const TransactionInProgressError = coded('TransactionInProgressError', 'TRANSACTION_IN_PROGRESS');
/** `next` or `flush` without a transaction in progress. */
export const NoTransactionError = coded('NoTransactionError', 'NO_TRANSACTION');
/** `start` for a workspace kind the params do not define. */
export const UnknownWsKindError = coded('UnknownWsKindError', 'UNKNOWN_WS_KIND');
/** `next` for a sequence the transaction's workspace kind does not define. */
export const UnknownSeqIdError = coded('UnknownSeqIdError', 'UNKNOWN_SEQ_ID');
/** `actualize` while actualization is already in progress. */
export const AlreadyActualizingError = coded('AlreadyActualizingError', 'ALREADY_ACTUALIZING');
/** A sequence reached the largest number there is. */
export const SequenceExhaustedError = coded('SequenceExhaustedError', 'SEQUENCE_EXHAUSTED');
/** A storage outcome was reported for work the core is not waiting for (a driver bug). */
export const UnknownTicketError = coded('UnknownTicketError', 'UNKNOWN_TICKET');
/** A storage outcome of the wrong kind was reported (a driver bug). */
export const WrongResultKindError = coded('WrongResultKindError', 'WRONG_RESULT_KIND');
/** `storage.readNumbers` returned a different count of numbers than sequences asked for. */
export const MalformedNumbersError = coded('MalformedNumbersError', 'MALFORMED_NUMBERS');
/** `storage.readPlog` returned a page that breaks its contract. */
export const MalformedPlogPageError = coded('MalformedPlogPageError', 'MALFORMED_PLOG_PAGE');
/** An argument (or a number from storage) is not an integer in the accepted range. */
export const InvalidArgumentError = coded('InvalidArgumentError', 'INVALID_ARGUMENT');
/** A number would exceed `Number.MAX_SAFE_INTEGER`; the transaction must be actualized. */
export const UnsafeIntegerError = coded('UnsafeIntegerError', 'UNSAFE_INTEGER');

/**
 * The package's wasm module is not instantiated yet: in a browser, call and `await init()`
 * first. The package's own code, not the core's (the core cannot run before it exists).
 */
export const NotInitializedError = coded('NotInitializedError', 'NOT_INITIALIZED');

/** A storage method threw or rejected; the original error is `cause`, the method is `op`. */
export class StorageError extends SequencerError {
  static code = 'STORAGE';

  /**
   * @param {string} op the storage method, e.g. `"write"`
   * @param {unknown} cause what it threw or rejected with
   */
  constructor(op, cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super('STORAGE', `storage.${op} failed: ${detail}`, { cause });
    /** @type {string} */
    this.op = op;
  }
}

/** Every coded error class by its code. */
export const errorClasses = Object.freeze(
  Object.fromEntries(
    [
      InvalidParamsError,
      CleanedUpError,
      TransactionInProgressError,
      NoTransactionError,
      UnknownWsKindError,
      UnknownSeqIdError,
      AlreadyActualizingError,
      SequenceExhaustedError,
      UnknownTicketError,
      WrongResultKindError,
      MalformedNumbersError,
      MalformedPlogPageError,
      InvalidArgumentError,
      UnsafeIntegerError,
      NotInitializedError,
    ].map((cls) => [cls.code, cls]),
  ),
);

/**
 * The error for a refusal reported by the wasm core (or by `CoreParams`).
 * @param {{ errorCode(): string, errorMessage(): string }} source
 * @returns {SequencerError}
 */
export function errorFrom(source) {
  const code = source.errorCode();
  const cls = errorClasses[code];
  const message = source.errorMessage();
  return cls ? new cls(message) : new SequencerError(code || 'UNKNOWN', message || 'unknown error');
}
