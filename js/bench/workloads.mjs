// The benchmark workloads W1..W6 on the wasm-bindgen build in Node, through the package's driver
// (`Sequencer`): `startNow` (in the call when the numbers are in memory or storage reads
// synchronously, as this bench's does), `next` per number, `flush`; and for W1, W2 and W5 the
// batched path too: one `flushStartBatch` per 64 events (it completes the previous batch and
// numbers the next). Run by `scripts/bench.sh` after `scripts/js-build.sh`; alone:
//   node js/bench/workloads.mjs
// Environment: BENCH_SCALE (default 1), BENCH_RUNS (default 3), BENCH_ONLY (W1,...,W6),
// BENCH_OUT (also write the rows there, tab-separated, for table.mjs).
//
// Storage is BenchStorage below: in memory, synchronous (W5: writes answer after 5 ms), its PLog
// kept as parallel Float64Arrays so a page is four zero-copy views. The loop yields to the event
// loop every CHUNK transactions, as a command processor serving requests would, so the
// flusher (a macrotask) runs between chunks.

import { writeFileSync } from 'node:fs';
import { Sequencer } from '../src/node.js';
import { initSync } from '../pkg/sequencer.js';

const KIND = 1;
const SEQS = [1, 2, 3];
const CHUNK = 1024;
/** Events per `flushStartBatch` call. */
const BATCH = 64;
const MAX_UNFLUSHED = 1_000_000;
const params = { seqTypes: { [KIND]: { 1: 1, 2: 1, 3: 1, 4: 1 } }, maxUnflushedValues: MAX_UNFLUSHED };

const env = (k) => (process.env[k] ?? '').trim();
const scale = Number(env('BENCH_SCALE') || 1);
const runs = Math.max(1, Number(env('BENCH_RUNS') || 3));
const only = env('BENCH_ONLY') ? env('BENCH_ONLY').split(',').map((s) => s.trim().toLowerCase()) : null;
const wants = (w) => only === null || only.includes(w.toLowerCase());
const n = (full) => Math.max(1, Math.floor(full * scale));
const turn = () => new Promise((resolve) => setImmediate(resolve));
const wasmMemory = () => initSync().memory.buffer.byteLength;

/**
 * The view's key of (`ws`, `seq`): a small integer while `ws` < 2^28, which V8 keeps unboxed (a
 * key such as ws * 65536 + seq becomes a heap number past ws 32,767, and W4's 100,000 cold
 * workspaces then time the map more than the sequencer). The workloads' sequences are 1..4.
 */
const key = (ws, seq) => ws * 8 + seq;

class BenchStorage {
  /** key(ws, seq) -> last number */
  view = new Map();
  nextOffset = 0;
  writes = 0;
  /** @param {number} delayMs */
  constructor(delayMs = 0) {
    this.delayMs = delayMs;
    this.plog = null;
  }

  /** A PLog of `events` events of `perEvent` values each; `valueOf(i, j)` -> { ws, seq, value }. */
  seedPlog(events, perEvent, valueOf) {
    const len = events * perEvent;
    const p = { offset: new Float64Array(len), ws: new Float64Array(len), seq: new Float64Array(len), value: new Float64Array(len), events, perEvent };
    let k = 0;
    for (let i = 0; i < events; i++) {
      for (let j = 0; j < perEvent; j++, k++) {
        const v = valueOf(i, j);
        p.offset[k] = i + 1;
        p.ws[k] = v.ws;
        p.seq[k] = v.seq;
        p.value[k] = v.value;
      }
    }
    this.plog = p;
  }

  readNumbers(ws, seqs) {
    return seqs.map((s) => this.view.get(key(ws, s)) ?? 0);
  }

  readNumbersMany(wsList, seqs) {
    return wsList.flatMap((ws) => this.readNumbers(ws, seqs));
  }

  readNextOffset() {
    return this.nextOffset;
  }

  #apply(ws, seq, value, length, nextOffset) {
    for (let i = 0; i < length; i++) this.view.set(key(ws[i], seq[i]), value[i]);
    this.nextOffset = nextOffset;
    this.writes++;
  }

  write(values, nextOffset) {
    if (this.delayMs === 0) {
      this.#apply(values.ws, values.seq, values.value, values.length, nextOffset);
      return undefined;
    }
    const ws = Float64Array.from(values.ws);
    const seq = Float64Array.from(values.seq);
    const value = Float64Array.from(values.value);
    return new Promise((resolve) =>
      setTimeout(() => {
        this.#apply(ws, seq, value, values.length, nextOffset);
        resolve();
      }, this.delayMs),
    );
  }

  readPlog(from, maxEvents) {
    const p = this.plog;
    if (p === null || from > p.events) return { values: null, next: from, end: true };
    const last = Math.min(p.events, from - 1 + maxEvents);
    const a = (from - 1) * p.perEvent;
    const b = last * p.perEvent;
    return {
      values: { offset: p.offset.subarray(a, b), ws: p.ws.subarray(a, b), seq: p.seq.subarray(a, b), value: p.value.subarray(a, b) },
      next: last + 1,
      end: last >= p.events,
    };
  }
}

/** One transaction; awaits only when the numbers must be loaded or the sequencer says not now. */
async function slowStart(seq, ws) {
  for (;;) {
    if (seq.notNowReason === 'needs-load') {
      const o = await seq.start(KIND, ws);
      if (o > 0) return o;
    } else {
      await turn();
    }
    const o = seq.tryStart(KIND, ws);
    if (o > 0) return o;
  }
}

/** `count` transactions over workspaces `wsOf(i)`; nanoseconds taken. */
async function transactions(seq, count, wsOf) {
  const t = process.hrtime.bigint();
  let sink = 0;
  for (let i = 0; i < count; ) {
    const end = Math.min(count, i + CHUNK);
    for (; i < end; i++) {
      const ws = wsOf(i);
      let o = seq.startNow(KIND, ws);
      if (typeof o !== 'number') o = await o;
      if (o === 0) await slowStart(seq, ws);
      sink += seq.next(1);
      sink += seq.next(2);
      sink += seq.next(3);
      seq.flush();
    }
    await turn();
  }
  const ns = Number(process.hrtime.bigint() - t);
  if (sink === -1) console.log('');
  return ns;
}

/** `count` transactions over workspaces `wsOf(i)` in batches of `BATCH` events, each batch
 * completing the previous one in the same call; nanoseconds taken. */
async function batches(seq, count, wsOf) {
  const list = new Float64Array(BATCH);
  const seqs = new Float64Array(SEQS);
  const t = process.hrtime.bigint();
  let sink = 0;
  let open = false;
  for (let i = 0; i < count; ) {
    const end = Math.min(count, i + CHUNK);
    while (i < end) {
      const k = Math.min(BATCH, end - i);
      for (let j = 0; j < k; j++) list[j] = wsOf(i + j);
      const ws = k === BATCH ? list : list.subarray(0, k);
      const b = open ? await seq.flushStartBatch(KIND, ws, seqs) : await seq.startBatch(KIND, ws, seqs);
      open = b.started > 0;
      if (b.started === 0) {
        await turn(); // not now: let the flusher run
        continue;
      }
      i += b.started;
      sink += b.numbers[0];
    }
    await turn();
  }
  if (open) seq.flush();
  const ns = Number(process.hrtime.bigint() - t);
  if (sink === -1) console.log('');
  return ns;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function measure(ops, fn) {
  const per = [];
  for (let r = 0; r < runs; r++) per.push((await fn()) / ops);
  return median(per);
}

const rows = [];
const row = (workload, path, ops, unit, ns, target = null, note = '') =>
  rows.push({ workload, engine: 'node', path, ops, unit, ns, target, note });

async function txWorkload(name, full, wsOf, delayMs, target) {
  const count = n(full);
  const ns = await measure(count, async () => {
    const storage = new BenchStorage(delayMs);
    const seq = await Sequencer.open({ params, storage, plogPageSize: 4096 });
    await transactions(seq, Math.min(1000, count), wsOf); // warm-up: first loads
    const ns = await transactions(seq, count, wsOf);
    await seq.whenFlushed();
    seq.close();
    return ns;
  });
  row(name, 'startNow, 3 next, flush', count, 'tx', ns, target);
  const batched = await measure(count, async () => {
    const storage = new BenchStorage(delayMs);
    const seq = await Sequencer.open({ params, storage, plogPageSize: 4096 });
    await transactions(seq, Math.min(1000, count), wsOf); // warm-up: first loads
    const ns = await batches(seq, count, wsOf);
    await seq.whenFlushed();
    seq.close();
    return ns;
  });
  row(name, `batches of ${BATCH} (flushStartBatch)`, count, 'tx', batched, null);
  return ns;
}

async function w3() {
  const events = n(1_000_000);
  const storage = new BenchStorage();
  storage.seedPlog(events, 3, (i, j) => ({ ws: i % 10_000, seq: SEQS[j], value: Math.floor(i / 10_000) + 1 }));
  const ns = await measure(events, async () => {
    storage.view = new Map();
    storage.nextOffset = 0;
    const t = process.hrtime.bigint();
    const seq = new Sequencer({ params, storage, plogPageSize: 4096 });
    await seq.whenReady();
    let o = seq.tryStart(KIND, 0);
    if (o === 0) o = await slowStart(seq, 0);
    const ns = Number(process.hrtime.bigint() - t);
    seq.flush();
    await seq.whenFlushed();
    seq.close();
    return ns;
  });
  row('W3 actualize', 'replay, pages of 4096 events', events, 'event', ns, { min_ops: 3_000_000 }, 'new -> first start');
}

async function w4() {
  const count = n(100_000);
  const ns = await measure(count, async () => {
    const storage = new BenchStorage();
    for (let ws = 0; ws < count; ws++) for (let s = 1; s <= 4; s++) storage.view.set(key(ws, s), 10);
    const seq = await Sequencer.open({ params, storage, plogPageSize: 4096 });
    const ns = await transactions(seq, count, (i) => i);
    await seq.whenFlushed();
    seq.close();
    return ns;
  });
  row('W4 cold', 'startNow (reads in the call), 3 next, flush', count, 'tx', ns, { min_ops: 500_000 }, 'every start loads');
}

async function w6() {
  const count = n(10_000);
  const mem = [];
  const ns = await measure(count, async () => {
    globalThis.gc?.();
    const storage = new BenchStorage();
    const before = process.memoryUsage().heapUsed + wasmMemory();
    const t = process.hrtime.bigint();
    const all = [];
    for (let i = 0; i < count; i++) all.push(new Sequencer({ params, storage, plogPageSize: 4096 }));
    const ns = Number(process.hrtime.bigint() - t);
    await Promise.all(all.map((s) => s.whenReady()));
    globalThis.gc?.();
    mem.push((process.memoryUsage().heapUsed + wasmMemory() - before) / count);
    for (const s of all) s.close();
    return ns;
  });
  row('W6 density', 'new Sequencer', count, 'instance', ns, { max_ns: 30_000 },
    `${(median(mem) / 1024).toFixed(1)} KiB/idle instance (JS heap + wasm memory growth)`);
}

const step = (s) => process.stderr.write(`bench (node): ${s}\n`);
step(`scale ${scale}, ${runs} runs per figure (median)`);
if (wants('W1')) {
  step('W1');
  await txWorkload('W1 tx', 2_000_000, (i) => i % 1000, 0, null);
}
if (wants('W2')) {
  step('W2');
  await txWorkload('W2 tx-hot', 2_000_000, () => 7, 0, { min_ops: 1_000_000 });
}
if (wants('W3')) {
  step('W3');
  await w3();
}
if (wants('W4')) {
  step('W4');
  await w4();
}
if (wants('W5')) {
  step('W5');
  const w1 = rows.find((r) => r.workload === 'W1 tx');
  await txWorkload('W5 slow flush', 2_000_000, (i) => i % 1000, 5, w1 ? { min_ops: (0.9 * 1e9) / w1.ns } : null);
}
if (wants('W6')) {
  step('W6');
  await w6();
}

const tsv = rows
  .map((r) => {
    const [tk, tv] = r.target ? Object.entries(r.target)[0] : ['', 0];
    return [r.workload, r.engine, r.path, r.ops, r.unit, r.ns.toFixed(3), '', tk, tv, r.note].join('\t');
  })
  .join('\n');
if (env('BENCH_OUT')) writeFileSync(env('BENCH_OUT'), `${tsv}\n`);
else for (const r of rows) console.log(`${r.workload}\t${r.path}\t${r.ns.toFixed(1)} ns/${r.unit}\t${(1e9 / r.ns).toFixed(0)}/s\t${r.note}`);
