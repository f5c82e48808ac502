// Compiled (not run) by `tsc -p tsconfig.json`: the declarations describe the whole API and
// accept what a TypeScript user writes.
import {
  CleanedUpError,
  MemoryStorage,
  NoTransactionError,
  Sequencer,
  SequencerError,
  StorageError,
  errorClasses,
  type ErrorCode,
  type PlogPage,
  type SeqStorage,
  type SeqValues,
  type SequencerStatus,
} from '@sequencer/wasm';

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
