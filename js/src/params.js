/**
 * Turns the JS params object into the core's `CoreParams`.
 * @module
 */

import { CoreParams } from '../pkg/sequencer.js';
import { errorFrom, InvalidParamsError } from './errors.js';
import { requireWasm } from './wasm.js';

/**
 * Entries of a `Record` or a `Map`, keys as numbers.
 * @param {Record<number, any> | Map<number, any>} table
 * @returns {Array<[number, any]>}
 */
function entries(table) {
  if (table instanceof Map) return [...table.entries()].map(([k, v]) => [Number(k), v]);
  if (table === null || typeof table !== 'object') {
    throw new InvalidParamsError('params.seqTypes must be an object or a Map: kind -> { seq: initial }');
  }
  return Object.entries(table).map(([k, v]) => [Number(k), v]);
}

/**
 * Validated core params for `params`; throws a coded `SequencerError` for invalid ones.
 * The caller owns the result and must `free()` it.
 * @param {Partial<import('./index').SequencerParams>} params
 * @param {boolean} [validate] check the whole (default); `false` checks each value only
 * @returns {CoreParams}
 */
export function toCoreParams(params, validate = true) {
  requireWasm('params');
  if (params === null || typeof params !== 'object') {
    throw new InvalidParamsError('params must be an object with seqTypes');
  }
  const core = new CoreParams();
  try {
    const ok = (/** @type {boolean} */ done) => {
      if (!done) throw errorFrom(core);
    };
    for (const [kind, seqs] of entries(/** @type {any} */ (params.seqTypes))) {
      for (const [seq, initial] of entries(seqs)) ok(core.addSeq(kind, seq, Number(initial)));
    }
    if (params.maxUnflushedValues !== undefined) ok(core.setMaxUnflushedValues(params.maxUnflushedValues));
    if (params.lruCacheSize !== undefined) ok(core.setLruCacheSize(params.lruCacheSize));
    if (params.batcherDelayOnOverflowMs !== undefined) ok(core.setBatcherDelayMs(params.batcherDelayOnOverflowMs));
    if (params.retryDelayMs !== undefined || params.maxRetryDelayMs !== undefined) {
      const first = params.retryDelayMs ?? 500;
      ok(core.setRetryDelayMs(first, params.maxRetryDelayMs ?? first));
    }
    if (params.retryJitterPercent !== undefined) ok(core.setRetryJitterPercent(params.retryJitterPercent));
    if (validate) ok(core.validate());
    return core;
  } catch (e) {
    core.free();
    throw e;
  }
}
