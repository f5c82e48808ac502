"""The conformance runner for Python: the `plog-sequencer` package (python/, installed from its
wheel into this runner's venv), which loads the component bundled in it under `wasmtime`. The
runner supplies what every runner models (README): a storage with fault counters, a manual
clock, the order in which queued operations run, and writes held back.
"""

import json
import re
from pathlib import Path

import plog_sequencer as ps

RUNNER = "python"
HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parent.parent / "scenarios"
DEFAULTS = {
    "max_unflushed_values": 500,
    "lru_cache_size": 100000,
    "batcher_delay_ms": 5,
    "retry_delay_ms": 500,
    "max_retry_delay_ms": 500,
    "retry_jitter_percent": 0,
}
MS = ps.MS


class StepFailed(Exception):
    pass


_PLUGIN = None


def plugin():
    """The package's bundled component, compiled once per process."""
    global _PLUGIN
    if _PLUGIN is None:
        _PLUGIN = ps.Plugin()
    return _PLUGIN


def subst(value, i):
    """Replaces "$i", "$i+K", "$i-K" inside a repeated step."""
    if isinstance(value, str):
        m = re.fullmatch(r"\$i([+-]\d+)?", value)
        return i + int(m.group(1) or 0) if m else value
    if isinstance(value, list):
        return [subst(v, i) for v in value]
    if isinstance(value, dict):
        return {k: subst(v, i) for k, v in value.items()}
    return value


class Injected(Exception):
    """A fault the scenario asked for."""


class ScenarioStorage(ps.MemoryStorage):
    """The package's in-memory storage with the scenarios' fault counters."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.faults = {"fail_writes": 0, "fail_reads": 0, "fail_number_reads": 0}

    def _fault(self, counter, what):
        if self.faults[counter] > 0:
            self.faults[counter] -= 1
            raise Injected(f"injected {what} failure")

    def read_numbers(self, ws, seqs):
        self._fault("fail_number_reads", "read-numbers")
        return super().read_numbers(ws, seqs)

    def read_numbers_many(self, ws, seqs):
        self._fault("fail_number_reads", "read-numbers")
        return super().read_numbers_many(ws, seqs)

    def write(self, values, next_plog_offset):
        self._fault("fail_writes", "write")
        super().write(values, next_plog_offset)

    def read_next_offset(self):
        self._fault("fail_reads", "read-next-offset")
        return super().read_next_offset()

    def read_plog(self, first):
        self._fault("fail_reads", "read-plog")
        return super().read_plog(first)


class ManualClock:
    """Moves only when a step advances it."""

    def __init__(self):
        self.ns = 0

    def now(self):
        return self.ns


class Runner:
    def __init__(self, scenario):
        self.scenario = scenario
        st = scenario.get("storage", {})
        plog = {o: [tuple(v) for v in vals] for o, vals in st.get("plog", [])}
        for e in st.get("plog_events", []):
            offset, vals = event_values(e)
            if offset in plog:
                raise StepFailed(f"[{RUNNER}] scenario {scenario['name']}: two PLog events at offset {offset}")
            plog[offset] = vals
        self.storage = ScenarioStorage(plog=plog, view={(w, s): v for w, s, v in st.get("view", [])},
                                       next_offset=st.get("next_offset", 0),
                                       page_events=scenario.get("page_events", 100))
        self.clock = ManualClock()
        self.hold = False
        self.seq = None

    # ---- calls ------------------------------------------------------------------------------

    @staticmethod
    def _outcome(o):
        if o == "written":
            return ps.Written()
        if "next_offset" in o:
            return ps.NextOffset(o["next_offset"])
        if "failed" in o:
            return ps.Failed(o["failed"])
        page = o["plog_page"]
        return ps.PlogPage(values=[ps.PlogValue(*v) for v in page["values"]], next=page["next"], end=page["end"])

    def call(self, step):
        """Makes the call; returns its result in scenario form, or raises `ps.SequencerError`."""
        name = step["call"]
        if name == "create":
            self.seq = None
            params = step.get("params", self.scenario.get("params", {}))
            p = guest_params(params)
            if params.get("system"):
                p = plugin().system_params(p)
            self.seq = plugin().open(p, self.storage, clock=self.clock)
            return None
        if name == "system_params":
            p = plugin().system_params(guest_params(step["params"]))
            out = {k: getattr(p, k) for k in ("max_unflushed_values", "lru_cache_size", "retry_jitter_percent")}
            for k in ("batcher_delay", "retry_delay", "max_retry_delay"):
                out[f"{k}_ms"] = getattr(p, f"{k}_ns") // MS
            out["kinds"] = sorted([k, sorted([s, first] for s, first in seqs.items())] for k, seqs in p.kinds.items())
            return out
        seq = self.seq
        if seq is None:
            raise StepFailed("no sequencer: a successful `create` step must come first")
        if name == "start":
            return start_outcome(seq.start(step["kind"], step["ws"]))
        if name == "start_next":
            outcome, numbers = seq.start_next(step["kind"], step["ws"], step["seqs"])
            return dict(start_outcome(outcome), numbers=numbers)
        if name == "next":
            return seq.next(step["seq"])
        if name in ("flush", "actualize", "pump", "cleanup", "finish_event", "cancel_event"):
            return getattr(seq, name)()
        if name == "status":
            return seq.status().value
        if name == "held_numbers":
            h = seq.held_numbers()
            return {"cached": h.cached, "unflushed": h.unflushed, "transaction": h.transaction}
        if name == "deliver":
            return seq.deliver(step["op"], self._outcome(step["outcome"]))
        if name == "start_event":
            r = seq.start_event(step["ws"])
            if isinstance(r, ps.NotNow):
                return {"not_now": r.reason.value}
            return {"started": {"plog": r.plog_offset, "wlog": r.wlog_offset}}
        if name in ("next_rec_id", "next_c_rec_id"):
            return getattr(seq, name)()
        if name == "event_status":
            return seq.event_status().value
        raise StepFailed(f"unknown call {name!r}")

    # ---- the task driver ----------------------------------------------------------------------

    def _runnable(self):
        """The first queued operation that may run: writes wait while held, and a
        read-next-offset never overtakes a queued write."""
        queue = self.seq.pending
        for i, p in enumerate(queue):
            if p.kind == "write" and self.hold:
                continue
            if p.kind == "read-next-offset" and any(q.kind == "write" for q in queue[:i]):
                continue
            return p
        return None

    def run_tasks(self, step):
        limit = step.get("max")
        performed = 0
        while self.seq is not None and (limit is None or performed < limit):
            p = self._runnable()
            if p is None:
                break
            try:
                self.seq.perform(p)
            except ps.SequencerError as e:
                raise StepFailed(f"deliver of {p.kind} op {p.op} was refused: {e}") from None
            performed += 1
        if "expect_performed" in step and performed != step["expect_performed"]:
            raise StepFailed(f"expected {step['expect_performed']} operations performed, got {performed}")

    # ---- steps ------------------------------------------------------------------------------

    def step(self, step, where):
        if "repeat" in step:
            for i in range(step["repeat"]):
                for j, inner in enumerate(step["steps"]):
                    self.step(subst(inner, i), f"{where}[i={i}].steps[{j}]")
            return
        try:
            self._step(step)
        except Exception as e:  # a trap or a runner bug is reported where it happened, too
            detail = str(e) if isinstance(e, StepFailed) else f"{type(e).__name__}: {e}"
            raise StepFailed(f"[{RUNNER}] scenario {self.scenario['name']}, {where} "
                             f"{json.dumps(step, separators=(',', ':'))}: {detail}") from None

    def _step(self, step):
        if "call" in step:
            try:
                r = self.call(step)
            except ps.SequencerError as e:
                if "expect_error" not in step:
                    raise StepFailed(f"refused: {e}") from None
                if e.code != step["expect_error"]:
                    raise StepFailed(f"expected error {step['expect_error']}, got {e}") from None
                return
            if "expect_error" in step:
                raise StepFailed(f"expected error {step['expect_error']}, got success {r!r}")
            if "expect" in step:
                want = step["expect"]
                got = r
                if step["call"] in ("held_numbers", "system_params"):
                    got = {k: r[k] for k in want}
                if got != want:
                    raise StepFailed(f"expected {json.dumps(want)}, got {json.dumps(got)}")
        elif "run" in step:
            if step["run"] != "tasks":
                raise StepFailed(f"unknown run {step['run']!r}")
            self.run_tasks(step)
        elif "advance_ms" in step:
            self.clock.ns += step["advance_ms"] * MS
            if self.seq is not None and self.seq.wake_at is not None and self.clock.ns >= self.seq.wake_at:
                self.seq.pump()
        elif "hold_writes" in step:
            self.hold = bool(step["hold_writes"])
        elif "fault" in step:
            for k, v in step["fault"].items():
                if k not in self.storage.faults:
                    raise StepFailed(f"unknown fault {k!r}")
                self.storage.faults[k] = v
        elif "append" in step or "append_event" in step:
            offset, values = step["append"] if "append" in step else event_values(step["append_event"])
            try:
                self.storage.append(offset, [tuple(v) for v in values])
            except ValueError as e:
                raise StepFailed(str(e)) from None
        elif "expect_storage" in step:
            self.expect_storage(step["expect_storage"])
        elif "expect_pending" in step:
            self.expect_pending(step["expect_pending"])
        elif "expect_wake_ms" in step:
            want = step["expect_wake_ms"]
            wake = self.seq.wake_at if self.seq is not None else None
            got = None if wake is None else wake / MS
            if got != want:
                raise StepFailed(f"expected wake at {want} ms, got {got}")
        elif "expect_wake_within_ms" in step:
            lo, hi = step["expect_wake_within_ms"]
            wake = self.seq.wake_at if self.seq is not None else None
            got = None if wake is None else wake / MS
            if got is None or not lo <= got <= hi:
                raise StepFailed(f"expected a wake-up within [{lo}, {hi}] ms, got {got}")
        else:
            raise StepFailed("unknown step")

    def expect_storage(self, want):
        st = self.storage
        for key, value in want.items():
            if key == "view":
                got = sorted([w, s, v] for (w, s), v in st.view.items())
                ok = got == sorted(value)
            elif key == "next_offset":
                got, ok = st.next_offset, st.next_offset == value
            elif key == "writes":
                got, ok = st.writes, st.writes == value
            elif key == "plog_next":
                got = st.plog_next()
                ok = got == value
            elif key == "consistent":
                got = all(st.view.get((w, s), 0) >= v
                          for o, vals in st.plog.items() if o < st.next_offset for w, s, v in vals)
                ok = got == value
            else:
                raise StepFailed(f"unknown storage check {key!r}")
            if not ok:
                raise StepFailed(f"storage {key}: expected {json.dumps(value)}, got {json.dumps(got)}")

    def expect_pending(self, want):
        got = []
        for p in (self.seq.pending if self.seq is not None else []):
            entry = {"kind": p.kind, "op": p.op}
            if p.kind == "write":
                entry["values"] = sorted([list(v) for v in p.values])
                entry["next_offset"] = p.next_offset
            elif p.kind == "read-plog":
                entry["first"] = p.first
            got.append(entry)
        ok = len(got) == len(want) and all(
            all((sorted(v) if k == "values" else v) == g.get(k) for k, v in w.items()) for w, g in zip(want, got))
        if not ok:
            raise StepFailed(f"expected pending {json.dumps(want)}, got {json.dumps(got)}")

    def run(self):
        for i, step in enumerate(self.scenario["steps"]):
            self.step(step, f"steps[{i}]")


def guest_params(params):
    """Scenario params (durations in ms, kinds as lists) as the package's `Params`."""
    p = dict(DEFAULTS, **params)
    kinds = {}
    for k, seqs in p.get("kinds", []):
        if k in kinds:
            raise StepFailed(f"kind {k} is given twice")
        kinds[k] = dict(seqs)
    return ps.Params(kinds=kinds, max_unflushed_values=p["max_unflushed_values"], lru_cache_size=p["lru_cache_size"],
                     batcher_delay_ns=p["batcher_delay_ms"] * MS, retry_delay_ns=p["retry_delay_ms"] * MS,
                     max_retry_delay_ns=p["max_retry_delay_ms"] * MS,
                     retry_jitter_percent=p["retry_jitter_percent"])


SEQ_OF_RECORD = {"CDoc": 3, "CRecord": 3, "ODoc": 2, "ORecord": 2, "WDoc": 2, "WRecord": 2}


def event_values(e):
    """The storage adapter's half of the facade: a platform event's offset and sequence values."""
    ws = e["ws"]
    values = [(ws, 1, e["wlog"])]
    for kind, rid in e.get("records", []):
        if kind not in SEQ_OF_RECORD:
            raise StepFailed(f"unknown record kind {kind!r}")
        values.append((ws, SEQ_OF_RECORD[kind], rid))
    stack = [e["argument"]] if "argument" in e else []
    while stack:
        obj = stack.pop()
        values.append((ws, 2, obj["id"]))
        stack.extend(obj.get("children", []))
    return e["offset"], values


def start_outcome(r):
    return {"not_now": r.reason.value} if isinstance(r, ps.NotNow) else {"started": r}


def scenario_files():
    return sorted(SCENARIOS.glob("*.json"))


def load(path):
    scenario = json.loads(Path(path).read_text())
    scenario["name"] = Path(path).stem
    return scenario


def run_scenario(path):
    Runner(load(path)).run()
