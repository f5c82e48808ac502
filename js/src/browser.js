/**
 * Entry point for browsers and bundlers (and any ES-module runtime): exports the package API
 * and `init(input?)`, which instantiates the wasm. Nothing runs at import (no top-level
 * await): the API throws `NotInitializedError` until `init()` has settled.
 * @module
 */

import initWasm from '../pkg/sequencer.js';
import { InvalidArgumentError } from './errors.js';
import { markReady } from './wasm.js';

/** @type {Promise<void> | null} */
let pending = null;

/**
 * True if `x` is an instance of the global constructor `name` (absent globals match nothing).
 * @param {unknown} x
 * @param {string} name
 */
function isA(x, name) {
  const ctor = /** @type {any} */ (globalThis)[name];
  return typeof ctor === 'function' && x instanceof ctor;
}

/**
 * The wasm source for wasm-bindgen's loader, or `InvalidArgumentError` for anything it cannot
 * load.
 * @param {unknown} input
 * @returns {unknown}
 */
function source(input) {
  const plain = input !== null && typeof input === 'object' && Object.getPrototypeOf(input) === Object.prototype;
  if (plain && 'module_or_path' in input) {
    input = /** @type {{ module_or_path?: unknown }} */ (input).module_or_path; // wasm-bindgen's own shape
  } else if (plain) {
    throw new InvalidArgumentError('init(input): a plain object must be wasm-bindgen\'s { module_or_path }');
  }
  if (
    input === undefined ||
    typeof input === 'string' ||
    input instanceof ArrayBuffer ||
    ArrayBuffer.isView(input) ||
    input instanceof WebAssembly.Module ||
    isA(input, 'URL') ||
    isA(input, 'Request') ||
    isA(input, 'Response') ||
    (input !== null && typeof input === 'object' && typeof (/** @type {any} */ (input).then) === 'function')
  ) {
    return input;
  }
  const what = input === null ? 'null' : typeof input === 'object' ? (input.constructor?.name ?? 'object') : typeof input;
  throw new InvalidArgumentError(
    `init(input): expected a URL or string, a Request, a Response or a Promise of one, bytes or a WebAssembly.Module, got ${what}`,
  );
}

/**
 * Instantiates the package's wasm; the API works once the returned promise resolves.
 *
 * `input` is where the wasm comes from: a URL or a string (fetched), a `Request`, a `Response`
 * or a Promise of one (streamed), the bytes (`ArrayBuffer` or a typed array), or a compiled
 * `WebAssembly.Module`. Without it the wasm is fetched from next to the package's glue
 * (`new URL('sequencer_bg.wasm', import.meta.url)`), which Vite and webpack rewrite to the
 * emitted file; with esbuild, pass the URL its `file` loader gives.
 *
 * Idempotent: every call returns the same promise (a later `input` is ignored), until one
 * rejects; the next call then tries again. An `input` of the wrong kind rejects with
 * `InvalidArgumentError`; a failed fetch or an invalid module rejects with the loader's error.
 * @param {unknown} [input]
 * @returns {Promise<void>}
 */
export function init(input) {
  if (pending !== null) return pending;
  let module_or_path;
  try {
    module_or_path = source(input);
  } catch (e) {
    return Promise.reject(e);
  }
  const p = initWasm({ module_or_path: /** @type {any} */ (module_or_path) }).then(() => markReady());
  pending = p;
  p.catch(() => {
    if (pending === p) pending = null;
  });
  return p;
}

export * from './api.js';
