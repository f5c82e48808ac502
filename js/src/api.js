/**
 * The package API, shared by the Node and the browser entry points (which load the wasm first).
 * @module
 */

export { Sequencer, defaultClock } from './sequencer.js';
export { MemoryStorage, WrongOffsetError, InjectedFault } from './memory-storage.js';
export * from './errors.js';
