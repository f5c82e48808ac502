import { MemoryStorage, Sequencer } from 'plog-sequencer';
const storage = new MemoryStorage(); // or any { readNumbers, readNextOffset, write, readPlog }
storage.seedEvent(42, [{ ws: 1000, seq: 1, value: 13 }]); // the PLog already holds event 42
const seq = await Sequencer.open({ params: { seqTypes: { 1: { 1: 1 } } }, storage }); // kind 1: sequence 1 from 1
const offset = await seq.start(1, 1000); // a transaction in workspace 1000 (kind 1): event offset 43
const id = seq.next(1); // the next number of sequence 1: 14
storage.append(offset, [{ ws: 1000, seq: 1, value: id }]); // the command processor writes its event
seq.flush(); // commit: the flusher persists 14 and offset 43 in the background
await seq.whenFlushed();
console.log(offset, id, storage.number(1000, 1)); seq.close(); // 43 14 14
