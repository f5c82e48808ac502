/**
 * Whether the wasm module is instantiated: the entry points mark it (Node's at import, the
 * browser's when `init()` settles), and every call into the wasm checks it first, so a call
 * made too early throws `NotInitializedError` instead of failing inside the glue.
 * @module
 */

import { NotInitializedError } from './errors.js';

let ready = false;

/** Records that the wasm module is instantiated. */
export function markReady() {
  ready = true;
}

/**
 * Throws `NotInitializedError` unless the wasm module is instantiated.
 * @param {string} what the call that needs it, for the message
 */
export function requireWasm(what) {
  if (!ready) {
    throw new NotInitializedError(
      `${what} needs the wasm module: call and await init() first (import { init } from 'plog-sequencer')`,
    );
  }
}
