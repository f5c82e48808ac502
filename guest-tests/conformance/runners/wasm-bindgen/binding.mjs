// The wasm-bindgen binding: the shell of js/pkg (built by scripts/test-js.sh) through the
// plog-sequencer package's low-level `SequencerCore`. Type conversion only: every rule is the
// shell's, as in the component. The shell queues the storage work it begins and keeps its
// wake-up; after every call this binding hands them to the host. A numbers read the shell
// hands out (this build's reads may be asynchronous, so it never reads inline) is performed
// at once and reported, and the call made again. The tables (statuses, error codes and their
// WIT cases, facade constants) come from the wasm module. The package's own async driver
// (`Sequencer`) runs on real timers and hides operation ids, so it cannot replay a scenario
// step by step.

import '../../../../js/src/node.js'; // instantiates the wasm (initSync) once
import {
  CoreParams,
  Sentinel,
  SequencerCore,
  WorkKind,
  errorCodes,
  errorWitCases,
  sequenceStatusNames,
  witStatusNames,
} from '../../../../js/pkg/sequencer.js';

const WORK = { [WorkKind.Write]: 'write', [WorkKind.ReadNextOffset]: 'read-next-offset', [WorkKind.ReadPlog]: 'read-plog' };
const STATUS = witStatusNames();
const EVENT_STATUS = sequenceStatusNames();
const WIT_CASE = Object.fromEntries(errorCodes().map((code, i) => [code, errorWitCases()[i]]));
const NOT_NOW = { [Sentinel.NotNowActualizing]: 'actualizing', [Sentinel.NotNowTooManyUnflushed]: 'too-many-unflushed' };

/** The WIT case for a package error code. */
export const witCase = (code) => WIT_CASE[code] || code;

/** Core params from scenario params (durations in ms), refusals as `{ error }`. */
function coreParams(p) {
  const params = new CoreParams();
  const ok = (b) => {
    if (!b) throw { error: witCase(params.errorCode()), detail: params.errorMessage() };
  };
  try {
    for (const [kind, seqs] of p.kinds ?? []) for (const [s, initial] of seqs) ok(params.addSeq(kind, s, initial));
    if (p.system) params.addSystemSequences();
    ok(params.setMaxUnflushedValues(p.max_unflushed_values));
    ok(params.setLruCacheSize(p.lru_cache_size));
    ok(params.setBatcherDelayMs(p.batcher_delay_ms));
    ok(params.setRetryDelayMs(p.retry_delay_ms, p.max_retry_delay_ms));
    ok(params.setRetryJitterPercent(p.retry_jitter_percent));
    return params;
  } catch (e) {
    params.free();
    throw e;
  }
}

export function makeBinding(host) {
  let core = null;
  const clock = { now: () => host.now() / 1e6 };
  const refused = () => ({ error: witCase(core.errorCode()), detail: core.errorMessage() });

  // Hands the work the shell began, and its wake-up, to the host.
  const handOver = () => {
    for (let kind; (kind = core.takeWork()) !== WorkKind.None; ) {
      const op = core.workTicket();
      if (kind === WorkKind.Write) {
        const flat = core.workValues();
        const n = flat.length / 3;
        const values = Array.from({ length: n }, (_, i) => [flat[i], flat[n + i], flat[2 * n + i]]);
        host.begin(WORK[kind], op, [values, core.workNextOffset()]);
      } else if (kind === WorkKind.ReadPlog) {
        host.begin(WORK[kind], op, [core.workFrom()]);
      } else {
        host.begin(WORK[kind], op, []);
      }
    }
    const at = core.wakeAt();
    host.setWake(at < 0 ? null : Math.round(at * 1e6));
  };

  // A starting call: performs the numbers reads the shell hands out, then calls again.
  const starting = (call, started) => {
    let r = call();
    while (r === Sentinel.Load) {
      const request = core.loadRequest(); // ticket, workspace, sequences
      const ticket = request[0];
      const read = host.readNumbers(request[1], Array.from(request.subarray(2)));
      if ('err' in read) {
        core.fail(ticket);
        handOver();
        return { error: 'storage', detail: read.err };
      }
      if (core.completeNumbers(ticket, read.ok) === Sentinel.Refused) {
        handOver();
        return refused();
      }
      r = call();
    }
    handOver();
    if (r > 0) return { value: started(r) };
    if (r in NOT_NOW) return { value: { not_now: NOT_NOW[r] } };
    return refused();
  };

  const done = (r) => {
    handOver();
    return r === Sentinel.Refused ? refused() : { value: null };
  };

  const number = (n) => (n === Sentinel.Refused ? refused() : { value: n });

  return {
    create(p) {
      let params;
      try {
        params = coreParams(p);
      } catch (e) {
        if (e && typeof e === 'object' && 'error' in e) return e;
        throw e;
      }
      try {
        if (!params.validate()) return { error: witCase(params.errorCode()), detail: params.errorMessage() };
        core = new SequencerCore(params, clock);
      } finally {
        params.free();
      }
      handOver();
      return { value: null };
    },
    start: (kind, ws) => starting(() => core.start(kind, ws), (offset) => ({ started: offset })),
    startNext(kind, ws, seqs) {
      const out = new Float64Array(seqs.length);
      const r = starting(() => core.startNext(kind, ws, seqs, out), (offset) => ({ started: offset, numbers: Array.from(out) }));
      return 'value' in r && !('started' in r.value) ? { value: { ...r.value, numbers: [] } } : r;
    },
    next: (s) => number(core.next(s)),
    flush: () => done(core.flush()),
    actualize: () => done(core.actualize()),
    cleanup() {
      core.cleanup();
      handOver();
      return { value: null };
    },
    pump() {
      core.pump();
      handOver();
      return { value: null };
    },
    status: () => ({ value: STATUS[core.status()] }),
    heldNumbers() {
      const [cached, unflushed, transaction] = core.heldNumbers();
      return { value: { cached, unflushed, transaction } };
    },
    systemParams(p) {
      const params = coreParams({ ...p, system: true });
      try {
        const flat = params.seqTypes();
        const kinds = new Map();
        for (let i = 0; i < flat.length; i += 3) {
          if (!kinds.has(flat[i])) kinds.set(flat[i], []);
          kinds.get(flat[i]).push([flat[i + 1], flat[i + 2]]);
        }
        return { value: { ...p, kinds: [...kinds] } };
      } finally {
        params.free();
      }
    },
    startEvent(ws) {
      const wlog = new Float64Array(1);
      return starting(() => core.startEvent(ws, wlog), (plog) => ({ started: { plog, wlog: wlog[0] } }));
    },
    nextRecId: () => number(core.nextRecId()),
    nextCRecId: () => number(core.nextCRecId()),
    finishEvent: () => done(core.finishEvent()),
    cancelEvent: () => done(core.cancelEvent()),
    eventStatus: () => ({ value: EVENT_STATUS[core.sequenceStatus()] }),
    deliver(op, o) {
      let r;
      if (o === 'written') r = core.completeWrite(op);
      else if ('next_offset' in o) r = core.completeNextOffset(op, o.next_offset);
      else if ('failed' in o) r = core.fail(op);
      else {
        const v = o.plog_page.values;
        const col = (i) => Float64Array.from(v, (row) => row[i]);
        r = core.completePlogRead(op, col(0), col(1), col(2), col(3), o.plog_page.next, o.plog_page.end);
      }
      return done(r);
    },
  };
}
