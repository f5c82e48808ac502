// The jco binding: the component transpiled by `jco transpile --instantiation sync` into
// ./gen (see scripts/test-conformance.sh), one fresh instance per `create`. WASI imports
// (std's wasi:cli, wasi:io and monotonic clock, never called) come from @bytecodealliance/preview2-shim.
//
// jco maps u64 to BigInt, raises a refused call as a ComponentError whose `payload` is the WIT
// `error` ({ tag, val }), and takes an import's `err` as a thrown value with a `payload`.

import { readFileSync } from 'node:fs';
import * as shim from '@bytecodealliance/preview2-shim';
import { instantiate } from './gen/sequencer.js';

const GEN = new URL('./gen/', import.meta.url);
const modules = new Map();
const getCoreModule = (name) => {
  if (!modules.has(name)) modules.set(name, new WebAssembly.Module(readFileSync(new URL(name, GEN))));
  return modules.get(name);
};

/** `wasi:cli/terminal-input` -> shim.cli.terminalInput */
const wasi = (name) => {
  const [pkg, iface] = name.slice('wasi:'.length).split('/');
  return shim[pkg][iface.replace(/-(\w)/g, (_, c) => c.toUpperCase())];
};

const WASI = [
  'cli/environment', 'cli/exit', 'cli/stderr', 'cli/stdin', 'cli/stdout', 'cli/terminal-input',
  'cli/terminal-output', 'cli/terminal-stderr', 'cli/terminal-stdin', 'cli/terminal-stdout',
  'io/error', 'io/poll', 'io/streams', 'clocks/monotonic-clock',
].map((i) => `wasi:${i}`);

const num = (b) => {
  const n = Number(b);
  if (!Number.isSafeInteger(n)) throw new Error(`${b} is beyond Number.MAX_SAFE_INTEGER`);
  return n;
};

function guard(f) {
  try {
    return { value: f() };
  } catch (e) {
    if (e && typeof e === 'object' && 'payload' in e && e.payload?.tag) {
      return { error: e.payload.tag, detail: JSON.stringify(e.payload.val ?? null, (_, v) => (typeof v === 'bigint' ? Number(v) : v)) };
    }
    throw e;
  }
}

const startOutcome = (o) => (o.tag === 'started' ? { started: num(o.val) } : { not_now: o.val });

function outcome(o) {
  if (o === 'written') return { tag: 'written' };
  if ('next_offset' in o) return { tag: 'next-offset', val: BigInt(o.next_offset) };
  if ('failed' in o) return { tag: 'failed', val: o.failed };
  const p = o.plog_page;
  return {
    tag: 'plog-page',
    val: {
      values: p.values.map(([offset, ws, seq, value]) => ({ offset: BigInt(offset), ws: BigInt(ws), seq, value: BigInt(value) })),
      next: BigInt(p.next),
      end: p.end,
    },
  };
}

export function makeBinding(host) {
  const imports = {
    'sequencer:plugin/storage': {
      readNumbers(ws, seqs) {
        const r = host.readNumbers(num(ws), Array.from(seqs));
        if ('err' in r) throw Object.assign(new Error(r.err), { payload: r.err });
        return BigUint64Array.from(r.ok.map(BigInt));
      },
      readNumbersMany(wsList, seqs) {
        const out = [];
        for (const ws of wsList) {
          const r = host.readNumbers(num(ws), Array.from(seqs));
          if ('err' in r) throw Object.assign(new Error(r.err), { payload: r.err });
          out.push(...r.ok);
        }
        return BigUint64Array.from(out.map(BigInt));
      },
      beginReadNextOffset: (op) => host.begin('read-next-offset', num(op), []),
      // The write's values are flat: workspace, sequence, number, value after value.
      beginWrite: (op, words, next) => {
        const values = [];
        for (let i = 0; i + 2 < words.length; i += 3) {
          values.push([num(words[i]), num(words[i + 1]), num(words[i + 2])]);
        }
        host.begin('write', num(op), [values, num(next)]);
      },
      beginReadPlog: (op, first) => host.begin('read-plog', num(op), [num(first)]),
    },
    'sequencer:plugin/clock': {
      now: () => BigInt(host.now()),
      setWake: (at) => host.setWake(at === undefined || at === null ? null : num(at)),
    },
    'sequencer:plugin/observer': { statusChanged: () => {} },
    'sequencer:plugin/types': {},
  };
  for (const name of WASI) imports[name] = wasi(name);
  let seq = null;
  let events = null;
  const ns = (ms) => BigInt(ms) * 1_000_000n;
  const ms = (n) => num(n / 1_000_000n);
  const guestParams = (p) => ({
    kinds: (p.kinds ?? []).map(([kind, seqs]) => ({ kind, sequences: seqs.map(([s, i]) => [s, BigInt(i)]) })),
    maxUnflushedValues: p.max_unflushed_values,
    lruCacheSize: p.lru_cache_size,
    batcherDelayNs: ns(p.batcher_delay_ms),
    retryDelayNs: ns(p.retry_delay_ms),
    maxRetryDelayNs: ns(p.max_retry_delay_ms),
    retryJitterPercent: p.retry_jitter_percent,
  });
  return {
    create(p) {
      const root = instantiate(getCoreModule, imports);
      const { Sequencer } = root.sequencerApi;
      events = root.events;
      return guard(() => {
        const params = guestParams(p);
        seq = Sequencer.create(p.system ? events.systemParams(params) : params);
      });
    },
    systemParams: (p) =>
      guard(() => {
        const r = instantiate(getCoreModule, imports).events.systemParams(guestParams(p));
        return {
          kinds: r.kinds.map(({ kind, sequences }) => [kind, sequences.map(([s, i]) => [s, num(i)])]),
          max_unflushed_values: r.maxUnflushedValues,
          lru_cache_size: r.lruCacheSize,
          batcher_delay_ms: ms(r.batcherDelayNs),
          retry_delay_ms: ms(r.retryDelayNs),
          max_retry_delay_ms: ms(r.maxRetryDelayNs),
          retry_jitter_percent: r.retryJitterPercent,
        };
      }),
    startEvent: (ws) =>
      guard(() => {
        const o = events.startEvent(seq, BigInt(ws));
        return o.tag === 'started'
          ? { started: { plog: num(o.val.plogOffset), wlog: num(o.val.wlogOffset) } }
          : { not_now: o.val };
      }),
    nextRecId: () => guard(() => num(events.nextRecId(seq))),
    nextCRecId: () => guard(() => num(events.nextCRecId(seq))),
    finishEvent: () => guard(() => events.finishEvent(seq)),
    cancelEvent: () => guard(() => events.cancelEvent(seq)),
    eventStatus: () => guard(() => events.status(seq)),
    start: (kind, ws) => guard(() => startOutcome(seq.start(kind, BigInt(ws)))),
    startNext: (kind, ws, seqs) =>
      guard(() => {
        const [o, numbers] = seq.startNext(kind, BigInt(ws), Uint16Array.from(seqs));
        return { ...startOutcome(o), numbers: Array.from(numbers, num) };
      }),
    next: (s) => guard(() => num(seq.next(s))),
    flush: () => guard(() => seq.flush()),
    actualize: () => guard(() => seq.actualize()),
    cleanup: () => guard(() => seq.cleanup()),
    pump: () => guard(() => seq.pump()),
    status: () => guard(() => seq.status()),
    heldNumbers: () => guard(() => ({ ...seq.heldNumbers() })),
    deliver: (op, o) => guard(() => seq.deliver(BigInt(op), outcome(o))),
  };
}
