// Prints the rows of the Rust bench and the Node bench (tab-separated files written with
// BENCH_OUT) as one table: ns and operations per second, the ratio to the native core on the
// same workload, the bound and the target with whether it is met. Used by scripts/bench.sh.
//   node js/bench/table.mjs rust.tsv node.tsv

import { readFileSync } from 'node:fs';

const NO_GC = 'no group commit';
const rows = process.argv
  .slice(2)
  .flatMap((f) => readFileSync(f, 'utf8').split('\n'))
  .filter((l) => l.trim() !== '')
  .map((l) => {
    const [workload, engine, path, ops, unit, ns, bound, tkind, tval, note] = l.split('\t');
    return { workload, engine, path, ops: Number(ops), unit, ns: Number(ns), bound: bound ? Number(bound) : null, tkind, tval: Number(tval), note: note ?? '' };
  });

const si = (v) => (v >= 1e6 ? `${(v / 1e6).toFixed(2)}M` : v >= 1e3 ? `${(v / 1e3).toFixed(1)}k` : v.toFixed(0));
const order = (w) => ['empty call', 'W1 tx', 'W2 tx-hot', 'W3 actualize', 'W4 cold', 'W5 slow flush', 'W6 density'].indexOf(w);
const engines = ['native', 'component', 'node'];
rows.sort((a, b) => order(a.workload) - order(b.workload) || engines.indexOf(a.engine) - engines.indexOf(b.engine));

const header = ['workload', 'engine', 'path', 'ops', 'ns/op', 'ops/s', 'x native', 'bound ns', 'target', 'met', 'note'];
const lines = [header];
for (const r of rows) {
  const native = rows.find((n) => n.workload === r.workload && n.engine === 'native' && n.path.includes(NO_GC) === r.path.includes(NO_GC));
  let target = '';
  let met = '';
  if (r.tkind === 'min_ops' && r.tval > 0) {
    target = `>= ${si(r.tval)}/s`;
    met = 1e9 / r.ns >= r.tval ? 'met' : `MISSED (${((100 * (1e9 / r.ns)) / r.tval).toFixed(0)}%)`;
  } else if (r.tkind === 'max_ns' && r.tval > 0) {
    target = `<= ${(r.tval / 1e3).toFixed(0)} us`;
    met = r.ns <= r.tval ? 'met' : `MISSED (${(r.ns / r.tval).toFixed(2)}x)`;
  }
  if (r.bound !== null) {
    const within = r.ns <= r.bound;
    met = [met, within ? 'in bound' : `OVER BOUND (${(r.ns / r.bound).toFixed(2)}x)`].filter(Boolean).join(', ');
  }
  lines.push([
    r.workload,
    r.engine,
    r.path,
    `${si(r.ops)} ${r.unit}`,
    r.ns.toFixed(1),
    si(1e9 / r.ns),
    native && r.engine !== 'native' ? (r.ns / native.ns).toFixed(2) : '',
    r.bound !== null ? r.bound.toFixed(0) : '',
    target,
    met,
    r.note,
  ]);
}
const widths = header.map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
const right = new Set([3, 4, 5, 6, 7]);
for (const [k, l] of lines.entries()) {
  console.log(`| ${l.map((c, i) => (right.has(i) ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i]))).join(' | ')} |`);
  if (k === 0) console.log(`|${widths.map((w, i) => (right.has(i) ? `${'-'.repeat(w + 1)}:` : `${'-'.repeat(w + 2)}`)).join('|')}|`);
}
