/**
 * Entry point for browsers (and any ES-module runtime with `fetch`): fetches and instantiates
 * the wasm next to this package, then exports the package API.
 * @module
 */

import init from '../pkg/sequencer.js';

await init({ module_or_path: new URL('../pkg/sequencer_bg.wasm', import.meta.url) });

export * from './api.js';
