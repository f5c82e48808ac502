// The wasm-bindgen binding: the core of js/pkg (built by scripts/test-js.sh), through the
// @sequencer/wasm package's low-level `SequencerCore`, behind an adapter that does what the
// component's glue (src/component.rs) does: after create, flush, actualize, deliver and pump it
// polls every piece of work now due and "begins" it (hands it to the host), then tells the host
// the core's next wake-up; start performs the numbers read inline. The package's own async
// driver (`Sequencer`) runs on real timers and hides operation ids, so it cannot replay a
// scenario step by step. The facade (the WIT `events` interface) is likewise done here as the
// glue's `impl GuestEvents` does it: system params in kind 0, `start-event` = start kind 0 +
// next of sequence 1 (recovering if that next is refused), ids = next of 2 and 3, finish =
// flush, cancel = actualize. (js/src/facade.js's `EventSequencer` sits on the async driver.)
//
// Error codes: the package's SCREAMING_SNAKE codes map to the WIT `error` case names.

import '../../../../js/src/node.js'; // instantiates the wasm (initSync) once
import { CoreParams, SequencerCore } from '../../../../js/pkg/sequencer.js';

// Sentinels and work kinds of src/js.rs.
const ERR = -1;
const START_NOT_NOW_ACTUALIZING = -2;
const START_NOT_NOW_TOO_MANY_UNFLUSHED = -3;
const START_LOAD = -4;
const WORK = { 1: 'write', 2: 'read-next-offset', 3: 'read-plog' };
const STATUS = ['actualizing', 'ready', 'in-transaction', 'cleaned-up'];
const EVENT_STATUS = ['recover', 'ready', 'eventing', 'finished'];

// src/facade.rs: the system kind, its sequences and their first numbers.
const SYSTEM_KIND = 0;
const [SEQ_WLOG_OFFSET, SEQ_REC_ID, SEQ_CREC_ID] = [1, 2, 3];
const SYSTEM_SEQS = [[SEQ_WLOG_OFFSET, 1], [SEQ_REC_ID, 322680000131072], [SEQ_CREC_ID, 322685000131072]];

/** src/component.rs `system_params`: kind 0 gets the system sequences (replacing those ids);
 * its other sequences and the other kinds are kept. */
const systemParams = (p) => {
  const kinds = (p.kinds ?? []).map(([k, seqs]) => [k, [...seqs]]);
  let system = kinds.find(([k]) => k === SYSTEM_KIND);
  if (!system) kinds.push((system = [SYSTEM_KIND, []]));
  system[1] = [...system[1].filter(([s]) => !SYSTEM_SEQS.some(([x]) => x === s)), ...SYSTEM_SEQS];
  return { ...p, kinds };
};

/** The WIT case for a package error code. */
export function witCase(code) {
  const special = { UNKNOWN_TICKET: 'unknown-operation', WRONG_RESULT_KIND: 'wrong-outcome' };
  return special[code] ?? code.toLowerCase().replaceAll('_', '-');
}

export function makeBinding(host) {
  let core = null;
  const nowMs = () => host.now() / 1e6;
  const refused = (source) => ({ error: witCase(source.errorCode()), detail: source.errorMessage() });

  // src/component.rs `pump_core`: begin all work due, then keep the host's wake-up current.
  const pumpCore = () => {
    for (;;) {
      const kind = WORK[core.pollWork(nowMs())];
      if (!kind) break;
      const op = core.workTicket();
      if (kind === 'write') {
        const flat = core.workValues();
        const n = flat.length / 3;
        const values = Array.from({ length: n }, (_, i) => [flat[i], flat[n + i], flat[2 * n + i]]);
        host.begin(kind, op, [values, core.workNextOffset()]);
      } else if (kind === 'read-plog') {
        host.begin(kind, op, [core.workFrom()]);
      } else {
        host.begin(kind, op, []);
      }
    }
    const at = core.pollTimeout();
    host.setWake(at < 0 ? null : Math.round(at * 1e6));
  };

  const startOutcome = (r) => {
    if (r > 0) return { value: { started: r } };
    if (r === START_NOT_NOW_ACTUALIZING) return { value: { not_now: 'actualizing' } };
    if (r === START_NOT_NOW_TOO_MANY_UNFLUSHED) return { value: { not_now: 'too-many-unflushed' } };
    return refused(core);
  };

  // src/component.rs `start_core`: a load is read from storage inline, then the start completes.
  const start = (kind, ws) => {
    let r = core.start(kind, ws);
    for (let i = 0; i < 2 && r === START_LOAD; i++) {
      const ticket = core.loadTicket();
      const read = host.readNumbers(ws, Array.from(core.loadSeqs()));
      if ('err' in read) {
        core.fail(ticket, nowMs());
        return { error: 'storage', detail: read.err };
      }
      r = core.completeNumbers(ticket, read.ok);
    }
    if (r === START_LOAD) return { error: 'storage', detail: 'numbers read for start did not stay in memory' };
    return startOutcome(r);
  };

  const done = (r) => {
    if (r === ERR) return refused(core);
    pumpCore();
    return { value: null };
  };

  const next = (s) => {
    const n = core.next(s);
    return n < 0 ? refused(core) : { value: n };
  };

  return {
    create(p) {
      if (p.system) p = systemParams(p);
      const params = new CoreParams();
      try {
        const ok = (b) => {
          if (!b) throw refused(params);
        };
        for (const [kind, seqs] of p.kinds ?? []) for (const [s, initial] of seqs) ok(params.addSeq(kind, s, initial));
        ok(params.setMaxUnflushedValues(p.max_unflushed_values));
        ok(params.setLruCacheSize(p.lru_cache_size));
        ok(params.setBatcherDelayMs(p.batcher_delay_ms));
        ok(params.setRetryDelayMs(p.retry_delay_ms, p.max_retry_delay_ms));
        ok(params.validate());
        core = new SequencerCore(params);
      } catch (e) {
        if (e && typeof e === 'object' && 'error' in e) return e;
        throw e;
      } finally {
        params.free();
      }
      pumpCore();
      return { value: null };
    },
    start,
    startNext(kind, ws, seqs) {
      const r = start(kind, ws);
      if ('error' in r || !('started' in r.value)) return 'error' in r ? r : { value: { ...r.value, numbers: [] } };
      const numbers = [];
      for (const s of seqs) {
        const n = core.next(s);
        if (n < 0) {
          const e = refused(core);
          core.actualize(); // refused as a whole: no transaction stays open behind it
          pumpCore();
          return e;
        }
        numbers.push(n);
      }
      return { value: { ...r.value, numbers } };
    },
    next,
    flush: () => done(core.flush()),
    actualize: () => done(core.actualize()),
    cleanup() {
      core.cleanup();
      host.setWake(null);
      return { value: null };
    },
    pump() {
      pumpCore();
      return { value: null };
    },
    status: () => ({ value: STATUS[core.status()] }),
    heldNumbers() {
      const [cached, unflushed, transaction] = core.heldNumbers();
      return { value: { cached, unflushed, transaction } };
    },
    systemParams: (p) => ({ value: systemParams(p) }),
    startEvent(ws) {
      const r = start(SYSTEM_KIND, ws);
      if ('error' in r || !('started' in r.value)) return r;
      const wlog = next(SEQ_WLOG_OFFSET);
      if ('error' in wlog) {
        core.actualize(); // no half-started event stays behind a refusal
        pumpCore();
        return wlog;
      }
      return { value: { started: { plog: r.value.started, wlog: wlog.value } } };
    },
    nextRecId: () => next(SEQ_REC_ID),
    nextCRecId: () => next(SEQ_CREC_ID),
    finishEvent: () => done(core.flush()),
    cancelEvent: () => done(core.actualize()),
    eventStatus: () => ({ value: EVENT_STATUS[core.status()] }),
    deliver(op, o) {
      let r;
      if (o === 'written') r = core.completeWrite(op);
      else if ('next_offset' in o) r = core.completeNextOffset(op, o.next_offset);
      else if ('failed' in o) r = core.fail(op, nowMs());
      else {
        const v = o.plog_page.values;
        const col = (i) => Float64Array.from(v, (row) => row[i]);
        r = core.completePlogRead(op, col(0), col(1), col(2), col(3), o.plog_page.next, o.plog_page.end, nowMs());
      }
      return done(r);
    },
  };
}
