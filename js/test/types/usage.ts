// Compiled (not run) by `tsc -p tsconfig.json`: the declarations describe the whole API and
// accept what a TypeScript user writes.
import {
  CleanedUpError,
  init,
  NotInitializedError,
  EventSequencer,
  FIRST_CREC_ID,
  FIRST_REC_ID,
  MemoryStorage,
  NoTransactionError,
  Sequencer,
  SequencerError,
  StorageError,
  errorClasses,
  SEQ_REC_ID,
  SYSTEM_KIND,
  eventValues,
  systemParams,
  type BatchResult,
  type ErrorCode,
  type PlatformEvent,
  type PlogPage,
  type SequenceStatus,
  type StartedEvent,
  type TimerClock,
  type SeqStorage,
  type SeqValues,
  type SequencerStatus,
} from 'plog-sequencer';

/** A storage of the user's own, all async. */
class MyStorage implements SeqStorage {
  async readNumbers(ws: number, seqs: readonly number[]): Promise<number[]> {
    return seqs.map(() => ws * 0);
  }
  async readNextOffset(): Promise<number> {
    return 0;
  }
  async write(values: SeqValues, nextOffset: number): Promise<void> {
    for (let i = 0; i < values.length; i++) void [values.ws[i], values.seq[i], values.value[i], nextOffset];
  }
  readPlog(from: number, _maxEvents: number): PlogPage {
    return { next: from, end: true };
  }
}

export async function usage(): Promise<number> {
  await init(); // Node: resolves at once; a bundle: fetches the wasm next to the package
  await init(new Uint8Array(0));
  void NotInitializedError.code;
  const memory = new MemoryStorage({ async: true, delay: () => 1 });
  memory.seedEvent(1, [{ ws: 1, seq: 1, value: 5 }]);
  memory.failWrites = 1;
  memory.holdWrites = false;
  await memory.waitFor(() => memory.heldWrites === 0);

  const seq = await Sequencer.open({
    params: { seqTypes: { 1: { 1: 1, 2: 100 } }, maxUnflushedValues: 500, retryDelayMs: 10, maxRetryDelayMs: 1000 },
    storage: new MyStorage(),
    clock: { now: () => Date.now() },
    plogPageSize: 64,
    onError: (e: SequencerError) => void e.code,
  });
  const status: SequencerStatus = seq.status;
  const offset: number = await seq.start(1, 7);
  if (offset === 0 && seq.notNowReason === 'actualizing') await seq.whenReady();
  const n: number = seq.next(1);
  seq.flush();
  await seq.whenFlushed();
  const fast: number = seq.tryStart(1, 7);
  const now: number | Promise<number> = seq.startNow(1, 7);
  const nowOffset: number = typeof now === 'number' ? now : await now;
  void nowOffset;
  const out = new Float64Array(2);
  const one: number = await seq.startNext(1, 7, [1, 2], out);
  const next: number = await seq.flushStartNext(1, 8, [1, 2], out);
  const batch: BatchResult = await seq.startBatch(1, [1, 2, 3], [1]);
  const more: BatchResult = await seq.flushStartBatch(1, new Float64Array([4, 5]), [1]);
  void [one, next, batch.started, batch.firstOffset, batch.notNowReason, batch.numbers[0], more];
  const event: StartedEvent | null = await seq.startEvent(7);
  if (event !== null) void [seq.nextRecId(), seq.nextCRecId(), seq.finishEvent, seq.cancelEvent];
  const spec: SequenceStatus = seq.sequenceStatus;
  void spec;
  try {
    seq.next(1);
  } catch (e) {
    if (e instanceof NoTransactionError) {
      const code: 'NO_TRANSACTION' = e.code;
      void code;
    } else if (e instanceof StorageError) {
      void [e.op, e.cause];
    } else if (e instanceof SequencerError) {
      const code: ErrorCode | string = e.code;
      void code;
    }
  }
  const cls = errorClasses.CLEANED_UP;
  void new cls('closed');
  void new CleanedUpError();
  seq.close();
  const other = new Sequencer({ params: { seqTypes: new Map([[1, new Map([[1, 1]])]]) }, storage: memory });
  void other.heldNumbers.unflushed;
  other.close();
  return offset + n + fast + status.length;
}

/** The ISequence facade as a command processor uses it. */
export async function facadeUsage(): Promise<number> {
  const storage = new MemoryStorage();
  const event: PlatformEvent = {
    ws: 5,
    wlogOffset: 1,
    newRecords: [{ kind: 'CDoc', id: FIRST_CREC_ID }, { kind: 'WRecord', id: FIRST_REC_ID }],
    argument: { id: FIRST_REC_ID + 1, children: [{ id: FIRST_REC_ID + 2 }] },
  };
  storage.seedEvent(1, eventValues(event));
  const params = systemParams({ seqTypes: { 1: { 1: 1 } }, maxUnflushedValues: 100 });
  void params.seqTypes;
  let t = 0;
  const clock: TimerClock = { now: () => t, setTimeout: (cb, ms) => ((t += ms), cb()), clearTimeout: () => {} };
  const seq = new EventSequencer({ storage, clock, params: { retryDelayMs: 10 } });
  const opened = await EventSequencer.open({ storage });
  opened.close();
  const status: SequenceStatus = seq.status;
  const started: StartedEvent | null = await seq.startEvent(1000, 5);
  if (started === null) return 0;
  const ids: number[] = [seq.nextRecId(), seq.nextCRecId()];
  storage.append(started.plogOffset, eventValues({ ws: 5, wlogOffset: started.wlogOffset, newRecords: [{ kind: 'ODoc', id: ids[0] }] }));
  seq.finishEvent();
  await seq.whenFlushed();
  if ((await seq.startEvent(0, 5)) !== null) seq.cancelEvent();
  await seq.whenReady();
  void seq.sequencer.heldNumbers;
  seq.close();
  return started.plogOffset + ids.length + status.length + SYSTEM_KIND + SEQ_REC_ID;
}
