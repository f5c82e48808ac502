/**
 * The package API, shared by the Node and the browser entry points (which load the wasm first).
 * @module
 */

export { Sequencer, defaultClock } from './sequencer.js';
export {
  EventSequencer,
  eventValues,
  systemParams,
  SYSTEM_KIND,
  SEQ_WLOG_OFFSET,
  SEQ_REC_ID,
  SEQ_CREC_ID,
  FIRST_WLOG_OFFSET,
  REGISTER_FACTOR,
  FIRST_USER_BASE_RECORD_ID,
  FIRST_REC_ID,
  FIRST_CREC_ID,
} from './facade.js';
export { MemoryStorage, WrongOffsetError, InjectedFault } from './memory-storage.js';
export * from './errors.js';
