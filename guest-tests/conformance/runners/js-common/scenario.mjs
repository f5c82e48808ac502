// The scenario interpreter shared by the two JavaScript runners: an in-memory storage, a task
// queue and a manual clock, driving a "binding" (the jco-transpiled component, or the
// wasm-bindgen core behind an adapter that does what the component's glue does).
//
// A binding is built with `makeBinding(host)`, where `host` offers the component's imports:
//   host.readNumbers(ws, seqs) -> { ok: numbers } | { err: message }
//   host.begin(kind, op, args)  kind: 'write' (args [values, nextOffset]), 'read-next-offset',
//                               'read-plog' (args [first])
//   host.now() -> nanoseconds (Number);  host.setWake(atNs | null)
// and exposes create(params) (params.system: apply `system-params` first), start, startNext,
// next, flush, actualize, cleanup, pump, status, heldNumbers, deliver(op, outcome), and the
// facade: systemParams(params) (-> params in the scenario's form), startEvent(ws) (-> { started:
// { plog, wlog } } | { not_now }), nextRecId, nextCRecId, finishEvent, cancelEvent, eventStatus;
// each returns { value } or { error: 'wit-case-name' }.
// All numbers crossing this interface are plain JS Numbers (scenarios keep to safe integers).

import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SCENARIOS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'scenarios');
const MS = 1_000_000;
const DEFAULTS = {
  max_unflushed_values: 500,
  lru_cache_size: 100000,
  batcher_delay_ms: 5,
  retry_delay_ms: 500,
  max_retry_delay_ms: 500,
  retry_jitter_percent: 0,
};

export class StepFailed extends Error {}

/** The scenario files, in name order. */
export function scenarioFiles() {
  return readdirSync(SCENARIOS)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(SCENARIOS, f));
}

/** Params with the defaults filled in (durations still in ms). */
export function fullParams(params) {
  return { ...DEFAULTS, ...params };
}

function subst(value, i) {
  if (typeof value === 'string') {
    const m = /^\$i([+-]\d+)?$/.exec(value);
    return m ? i + Number(m[1] ?? 0) : value;
  }
  if (Array.isArray(value)) return value.map((v) => subst(v, i));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, subst(v, i)]));
  }
  return value;
}

const SEQ_OF_RECORD = { CDoc: 3, CRecord: 3, ODoc: 2, ORecord: 2, WDoc: 2, WRecord: 2 };

/** The storage adapter's half of the facade: a platform event's offset and sequence values. */
export function eventValues(e) {
  const values = [[e.ws, 1, e.wlog]];
  for (const [kind, id] of e.records ?? []) {
    if (!(kind in SEQ_OF_RECORD)) throw new StepFailed(`unknown record kind ${JSON.stringify(kind)}`);
    values.push([e.ws, SEQ_OF_RECORD[kind], id]);
  }
  const stack = e.argument ? [e.argument] : [];
  while (stack.length) {
    const obj = stack.pop();
    values.push([e.ws, 2, obj.id]);
    stack.push(...(obj.children ?? []));
  }
  return [e.offset, values];
}

const json = (v) => JSON.stringify(v);
const same = (a, b) => json(a) === json(b);
const sortRows = (rows) => [...rows].map((r) => [...r]).sort((a, b) => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
});

class Runner {
  constructor(runner, scenario, makeBinding) {
    this.runner = runner;
    this.scenario = scenario;
    const st = scenario.storage ?? {};
    this.plog = new Map((st.plog ?? []).map(([o, vals]) => [o, vals.map((v) => [...v])]));
    for (const [offset, values] of (st.plog_events ?? []).map(eventValues)) {
      if (this.plog.has(offset)) throw new StepFailed(`[${runner}] scenario ${scenario.name}: two PLog events at offset ${offset}`);
      this.plog.set(offset, values);
    }
    this.view = new Map((st.view ?? []).map(([w, s, v]) => [`${w}/${s}`, v]));
    this.nextOffset = st.next_offset ?? 0;
    this.writes = 0;
    this.pageEvents = scenario.page_events ?? 100;
    this.faults = { fail_writes: 0, fail_reads: 0, fail_number_reads: 0 };
    this.hold = false;
    this.queue = []; // { kind, op, args }
    this.now = 0;
    this.wake = null;
    this.created = false;
    this.binding = makeBinding({
      readNumbers: (ws, seqs) => {
        if (this.faults.fail_number_reads > 0) {
          this.faults.fail_number_reads--;
          return { err: 'injected read-numbers failure' };
        }
        return { ok: seqs.map((s) => this.view.get(`${ws}/${s}`) ?? 0) };
      },
      begin: (kind, op, args) => this.queue.push({ kind, op, args }),
      now: () => this.now,
      setWake: (at) => {
        this.wake = at;
      },
    });
  }

  call(step) {
    const b = this.binding;
    const name = step.call;
    if (name === 'create') {
      this.queue = [];
      this.wake = null;
      const r = b.create(fullParams(step.params ?? this.scenario.params ?? {}));
      this.created = !('error' in r);
      return r;
    }
    if (name === 'system_params') {
      const r = b.systemParams(fullParams(step.params));
      if ('error' in r) return r;
      const kinds = r.value.kinds.map(([k, seqs]) => [k, sortRows(seqs)]).sort((x, y) => x[0] - y[0]);
      return { value: { ...r.value, kinds } };
    }
    if (!this.created) throw new StepFailed('no sequencer: a `create` step must come first');
    switch (name) {
      case 'start':
        return b.start(step.kind, step.ws);
      case 'start_next':
        return b.startNext(step.kind, step.ws, step.seqs);
      case 'next':
        return b.next(step.seq);
      case 'flush':
      case 'actualize':
      case 'pump':
        return b[name]();
      case 'cleanup': {
        const r = b.cleanup();
        this.queue = [];
        this.wake = null;
        return r;
      }
      case 'status':
        return b.status();
      case 'held_numbers':
        return b.heldNumbers();
      case 'deliver':
        this.queue = this.queue.filter((q) => q.op !== step.op);
        return b.deliver(step.op, step.outcome);
      case 'start_event':
        return b.startEvent(step.ws);
      case 'next_rec_id':
        return b.nextRecId();
      case 'next_c_rec_id':
        return b.nextCRecId();
      case 'finish_event':
        return b.finishEvent();
      case 'cancel_event':
        return b.cancelEvent();
      case 'event_status':
        return b.eventStatus();
      default:
        throw new StepFailed(`unknown call ${json(name)}`);
    }
  }

  runnable() {
    return this.queue.findIndex((q, i) => {
      if (q.kind === 'write') return !this.hold;
      if (q.kind === 'read-next-offset') return !this.queue.slice(0, i).some((p) => p.kind === 'write');
      return true;
    });
  }

  perform({ kind, args }) {
    if (kind === 'write') {
      if (this.faults.fail_writes > 0) {
        this.faults.fail_writes--;
        return { failed: 'injected write failure' };
      }
      const [values, next] = args;
      for (const [w, s, v] of values) this.view.set(`${w}/${s}`, v);
      this.nextOffset = next;
      this.writes++;
      return 'written';
    }
    if (this.faults.fail_reads > 0) {
      this.faults.fail_reads--;
      return { failed: `injected ${kind} failure` };
    }
    if (kind === 'read-next-offset') return { next_offset: this.nextOffset };
    const [first] = args;
    const all = [...this.plog.keys()].sort((a, b) => a - b);
    const offsets = all.filter((o) => o >= first).slice(0, this.pageEvents);
    const values = offsets.flatMap((o) => this.plog.get(o).map(([w, s, v]) => [o, w, s, v]));
    const next = offsets.length ? offsets[offsets.length - 1] + 1 : first;
    return { plog_page: { values, next, end: !all.some((o) => o >= next) } };
  }

  runTasks(step) {
    let performed = 0;
    while (step.max === undefined || performed < step.max) {
      const i = this.runnable();
      if (i < 0) break;
      const [q] = this.queue.splice(i, 1);
      const outcome = this.perform(q);
      performed++;
      const r = this.binding.deliver(q.op, outcome);
      if ('error' in r) throw new StepFailed(`deliver of ${q.kind} op ${q.op} was refused: ${r.error} ${r.detail ?? ''}`);
    }
    if (step.expect_performed !== undefined && performed !== step.expect_performed) {
      throw new StepFailed(`expected ${step.expect_performed} operations performed, got ${performed}`);
    }
  }

  step(step, where) {
    if ('repeat' in step) {
      for (let i = 0; i < step.repeat; i++) {
        step.steps.forEach((inner, j) => this.step(subst(inner, i), `${where}[i=${i}].steps[${j}]`));
      }
      return;
    }
    try {
      this.doStep(step);
    } catch (e) {
      // A trap or a runner bug is reported where it happened, too.
      const detail = e instanceof StepFailed ? e.message : `${e?.name ?? 'Error'}: ${e?.message ?? e}`;
      throw new StepFailed(`[${this.runner}] scenario ${this.scenario.name}, ${where} ${json(step)}: ${detail}`, { cause: e });
    }
  }

  doStep(step) {
    if ('call' in step) {
      const r = this.call(step);
      if ('expect_error' in step) {
        if (!('error' in r)) throw new StepFailed(`expected error ${step.expect_error}, got success ${json(r.value)}`);
        if (r.error !== step.expect_error) {
          throw new StepFailed(`expected error ${step.expect_error}, got ${r.error} ${r.detail ?? ''}`);
        }
        return;
      }
      if ('error' in r) throw new StepFailed(`refused: ${r.error} ${r.detail ?? ''}`);
      if ('expect' in step) {
        let got = r.value;
        if (step.call === 'held_numbers' || step.call === 'system_params') got = Object.fromEntries(Object.keys(step.expect).map((k) => [k, got[k]]));
        if (!same(got, step.expect)) throw new StepFailed(`expected ${json(step.expect)}, got ${json(got)}`);
      }
    } else if ('run' in step) {
      if (step.run !== 'tasks') throw new StepFailed(`unknown run ${json(step.run)}`);
      this.runTasks(step);
    } else if ('advance_ms' in step) {
      this.now += step.advance_ms * MS;
      if (this.wake !== null && this.now >= this.wake) {
        this.wake = null;
        this.binding.pump();
      }
    } else if ('hold_writes' in step) {
      this.hold = Boolean(step.hold_writes);
    } else if ('fault' in step) {
      for (const [k, v] of Object.entries(step.fault)) {
        if (!(k in this.faults)) throw new StepFailed(`unknown fault ${json(k)}`);
        this.faults[k] = v;
      }
    } else if ('append' in step || 'append_event' in step) {
      const [offset, values] = 'append' in step ? step.append : eventValues(step.append_event);
      const expected = this.plog.size ? Math.max(...this.plog.keys()) + 1 : 1;
      if (offset !== expected) throw new StepFailed(`append at ${offset}: the PLog's next offset is ${expected}`);
      this.plog.set(offset, values.map((v) => [...v]));
    } else if ('expect_storage' in step) {
      this.expectStorage(step.expect_storage);
    } else if ('expect_pending' in step) {
      this.expectPending(step.expect_pending);
    } else if ('expect_wake_ms' in step) {
      const got = this.wake === null ? null : this.wake / MS;
      if (got !== step.expect_wake_ms) throw new StepFailed(`expected wake at ${step.expect_wake_ms} ms, got ${got}`);
    } else if ('expect_wake_within_ms' in step) {
      const [lo, hi] = step.expect_wake_within_ms;
      const got = this.wake === null ? null : this.wake / MS;
      if (got === null || got < lo || got > hi) throw new StepFailed(`expected a wake-up within [${lo}, ${hi}] ms, got ${got}`);
    } else {
      throw new StepFailed('unknown step');
    }
  }

  expectStorage(want) {
    for (const [key, value] of Object.entries(want)) {
      let got;
      let ok;
      if (key === 'view') {
        got = sortRows([...this.view].map(([k, v]) => [...k.split('/').map(Number), v]));
        ok = same(got, sortRows(value));
      } else if (key === 'next_offset') {
        got = this.nextOffset;
        ok = got === value;
      } else if (key === 'writes') {
        got = this.writes;
        ok = got === value;
      } else if (key === 'plog_next') {
        got = this.plog.size ? Math.max(...this.plog.keys()) + 1 : 1;
        ok = got === value;
      } else if (key === 'consistent') {
        got = [...this.plog].every(([o, vals]) =>
          o >= this.nextOffset || vals.every(([w, s, v]) => (this.view.get(`${w}/${s}`) ?? 0) >= v));
        ok = got === value;
      } else {
        throw new StepFailed(`unknown storage check ${json(key)}`);
      }
      if (!ok) throw new StepFailed(`storage ${key}: expected ${json(value)}, got ${json(got)}`);
    }
  }

  expectPending(want) {
    const got = this.queue.map(({ kind, op, args }) => {
      const e = { kind, op };
      if (kind === 'write') {
        e.values = sortRows(args[0]);
        e.next_offset = args[1];
      } else if (kind === 'read-plog') {
        e.first = args[0];
      }
      return e;
    });
    const ok = got.length === want.length && want.every((w, i) =>
      Object.entries(w).every(([k, v]) => same(k === 'values' ? sortRows(v) : v, got[i][k])));
    if (!ok) throw new StepFailed(`expected pending ${json(want)}, got ${json(got)}`);
  }

  run() {
    this.scenario.steps.forEach((s, i) => this.step(s, `steps[${i}]`));
  }
}

/** Runs the scenario at `path` with bindings from `makeBinding`; throws StepFailed. */
export function runScenario(runner, path, makeBinding) {
  const scenario = JSON.parse(readFileSync(path, 'utf8'));
  scenario.name = basename(path, '.json');
  new Runner(runner, scenario, makeBinding).run();
}
