/**
 * Entry point for Node (ES modules; `src/node.cjs` serves `require`): instantiates the wasm
 * synchronously from the package's file, then exports the package API. `init()` is there for
 * code shared with browsers: it resolves at once (its argument is ignored).
 * @module
 */

import { readFileSync } from 'node:fs';
import { initSync } from '../pkg/sequencer.js';
import { markReady } from './wasm.js';

initSync({ module: readFileSync(new URL('../pkg/sequencer_bg.wasm', import.meta.url)) });
markReady();

const ready = Promise.resolve();

/**
 * The wasm is instantiated already: resolves at once, to the same promise every time.
 * @param {unknown} [_input] ignored
 * @returns {Promise<void>}
 */
export function init(_input) {
  return ready;
}

export * from './api.js';
