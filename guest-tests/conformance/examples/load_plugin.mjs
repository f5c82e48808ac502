// Load the sequencer component with jco and number one event. In a folder with
// `npm install @bytecodealliance/jco @bytecodealliance/preview2-shim` and "type": "module":
//   npx jco transpile path/to/sequencer.wasm -o gen --instantiation sync --name sequencer
//   node load_plugin.mjs   -> 43 14 14 43
import { readFileSync } from 'node:fs';
import * as shim from '@bytecodealliance/preview2-shim';
import { instantiate } from './gen/sequencer.js';

const view = new Map(); // the sequences view: "ws/seq" -> last
const plog = new Map([[42n, [{ ws: 1000n, seq: 1, value: 13n }]]]); // the PLog holds event 42
let storedOffset = 0n;
const ops = []; // storage work the guest began: performed by runTasks()
const imports = {
  'sequencer:plugin/storage': {
    readNumbers: (ws, seqs) => BigUint64Array.from(seqs, (s) => view.get(`${ws}/${s}`) ?? 0n),
    readNumbersMany: (wss, seqs) =>
      BigUint64Array.from([...wss].flatMap((ws) => [...seqs].map((s) => view.get(`${ws}/${s}`) ?? 0n))),
    beginReadNextOffset: (op) => ops.push({ op, kind: 'offset' }),
    beginWrite: (op, words, next) => ops.push({ op, kind: 'write', words, next }),
    beginReadPlog: (op, first) => ops.push({ op, kind: 'plog', first }),
  },
  // A real host calls seq.pump() once now() reaches `at`.
  'sequencer:plugin/clock': { now: () => 0n, setWake: (at) => {} },
  'sequencer:plugin/observer': { statusChanged: (status) => {} }, // the status, whenever it changes
};
// std's wasi:cli, wasi:io and monotonic-clock imports (the sequencer never calls them), from the
// preview2 shim.
for (const name of ['cli/environment', 'cli/exit', 'cli/stderr', 'cli/stdin', 'cli/stdout',
  'cli/terminal-input', 'cli/terminal-output', 'cli/terminal-stderr', 'cli/terminal-stdin',
  'cli/terminal-stdout', 'io/error', 'io/poll', 'io/streams', 'clocks/monotonic-clock']) {
  const [pkg, iface] = name.split('/');
  imports[`wasi:${name}`] = shim[pkg][iface.replace(/-(\w)/g, (_, c) => c.toUpperCase())];
}
const core = (file) => new WebAssembly.Module(readFileSync(new URL(`./gen/${file}`, import.meta.url)));
const { Sequencer } = instantiate(core, imports).sequencerApi;

// Refused calls throw a ComponentError whose `payload` is the WIT error ({ tag, val }).
const seq = Sequencer.create({
  kinds: [{ kind: 1, sequences: [[1, 1n]] }], maxUnflushedValues: 500, lruCacheSize: 100000,
  batcherDelayNs: 5_000_000n, retryDelayNs: 500_000_000n, maxRetryDelayNs: 10_000_000_000n,
  retryJitterPercent: 50,
});
function runTasks() { // perform what the guest began and report each outcome
  for (let o; (o = ops.shift()); ) {
    if (o.kind === 'offset') seq.deliver(o.op, { tag: 'next-offset', val: storedOffset });
    if (o.kind === 'write') {
      const w = o.words; // flat: workspace, sequence, number, value after value
      for (let i = 0; i < w.length; i += 3) view.set(`${w[i]}/${w[i + 1]}`, w[i + 2]);
      storedOffset = o.next;
      seq.deliver(o.op, { tag: 'written' });
    }
    if (o.kind === 'plog') {
      const found = [...plog.keys()].filter((x) => x >= o.first).sort((a, b) => (a < b ? -1 : 1));
      const values = found.flatMap((offset) => plog.get(offset).map((v) => ({ offset, ...v })));
      const next = found.length ? found.at(-1) + 1n : o.first;
      seq.deliver(o.op, { tag: 'plog-page', val: { values, next, end: true } });
    }
  }
}

runTasks(); // actualization: read the stored offset, replay the PLog
const { val: offset } = seq.start(1, 1000n); // { tag: 'started', val: 43n } (or 'not-now')
const id = seq.next(1);
plog.set(offset, [{ ws: 1000n, seq: 1, value: id }]); // the command processor writes its event
seq.flush();
runTasks(); // the flusher writes 14, then offset 43
console.log(`${offset} ${id} ${view.get('1000/1')} ${storedOffset}`);
