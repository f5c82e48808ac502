// A short scenario in the browser: a call before `init` is refused, `init` loads the wasm from
// the input the page's query names (`?input=default|url|request|response|bytes|module`), then
// actualize from a PLog, run transactions against an async in-memory storage, then a batch of
// two events in one call, flush, misuse once; the result lands in `window.sequencerResult`.
import { init, MemoryStorage, NoTransactionError, Sequencer } from 'plog-sequencer';

const WASM = '/pkg/sequencer_bg.wasm';

/** The `init` input the page's query asks for. */
async function input(kind) {
  switch (kind) {
    case 'default':
      return undefined; // next to the package's glue
    case 'url':
      return new URL(WASM, location.href);
    case 'request':
      return new Request(WASM);
    case 'response':
      return fetch(WASM); // a Promise of a Response: streamed
    case 'bytes':
      return new Uint8Array(await (await fetch(WASM)).arrayBuffer());
    case 'module':
      return WebAssembly.compileStreaming(fetch(WASM));
    default:
      throw new Error(`unknown input ${kind}`);
  }
}

async function scenario() {
  let before = null;
  try {
    new Sequencer({ params: { seqTypes: { 1: { 1: 1 } } }, storage: new MemoryStorage() });
  } catch (e) {
    before = e.code;
  }
  const loading = init(await input(new URLSearchParams(location.search).get('input')));
  const same = init() === loading;
  await loading;
  const storage = new MemoryStorage({ async: true });
  storage.seedEvent(42, [{ ws: 1000, seq: 1, value: 13 }]);
  const seq = await Sequencer.open({ params: { seqTypes: { 1: { 1: 1 } } }, storage });
  const offset = await seq.start(1, 1000);
  const id = seq.next(1);
  storage.append(offset, [{ ws: 1000, seq: 1, value: id }]);
  seq.flush();
  let last = id;
  for (let i = 0; i < 100; i++) {
    const o = await seq.start(1, 1000);
    last = seq.next(1);
    storage.append(o, [{ ws: 1000, seq: 1, value: last }]);
    seq.flush();
  }
  const batch = await seq.startBatch(1, [2000, 2001], [1]);
  for (let i = 0; i < batch.started; i++) {
    storage.append(batch.firstOffset + i, [{ ws: 2000 + i, seq: 1, value: batch.numbers[i] }]);
  }
  seq.flush();
  await seq.whenFlushed();
  let code = null;
  try {
    seq.next(1);
  } catch (e) {
    code = e instanceof NoTransactionError ? e.code : `wrong class: ${e}`;
  }
  seq.close();
  return {
    before,
    same,
    offset,
    id,
    last,
    stored: storage.number(1000, 1),
    batch: [batch.started, batch.firstOffset, ...batch.numbers],
    nextOffset: storage.nextOffset,
    code,
    status: seq.status,
  };
}

scenario().then(
  (result) => {
    window.sequencerResult = result;
    document.getElementById('result').textContent = JSON.stringify(result);
  },
  (e) => {
    window.sequencerResult = { error: String(e && e.stack ? e.stack : e) };
  },
);
