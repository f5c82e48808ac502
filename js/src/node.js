/**
 * Entry point for Node: instantiates the wasm synchronously from the package's file, then
 * exports the package API.
 * @module
 */

import { readFileSync } from 'node:fs';
import { initSync } from '../pkg/sequencer.js';

initSync({ module: readFileSync(new URL('../pkg/sequencer_bg.wasm', import.meta.url)) });

export * from './api.js';
