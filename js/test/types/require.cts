// Compiled (not run) by `tsc -p tsconfig.json`: a CommonJS TypeScript file requires the package
// (Node's require of ES modules, typed by TypeScript >= 5.8 under `module: nodenext`).
import sequencer = require('plog-sequencer');

export const status: sequencer.SequencerStatus = 'ready';
export const storage = new sequencer.MemoryStorage();
export const ready: Promise<void> = sequencer.init();
