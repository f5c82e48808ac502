"""The conformance runner for Python's `wasmtime` (50.x): the component through
`wasmtime.component`, an in-memory storage, a task queue and a manual clock.

Python's `wasmtime` returns `result` values untagged: a refusal comes back as a `Variant`
(the WIT `error` variant is tagged) instead of being raised, so every call is checked here.
"""

import json
import os
import re
from pathlib import Path

import wasmtime
from wasmtime import component as wc

RUNNER = "python"
HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parent.parent / "scenarios"
API = "sequencer:plugin/sequencer-api@0.2.0"
EVENTS = "sequencer:plugin/events@0.2.0"
DEFAULTS = {
    "max_unflushed_values": 500,
    "lru_cache_size": 100000,
    "batcher_delay_ms": 5,
    "retry_delay_ms": 500,
    "max_retry_delay_ms": 500,
    "retry_jitter_percent": 0,
}
MS = 1_000_000


class StepFailed(Exception):
    pass


def component_path():
    path = os.environ.get("SEQUENCER_COMPONENT")
    if not path:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
        path = os.path.join(target, "wasm32-wasip2/wasm/sequencer.wasm")
    return path


_ENGINE = None
_COMPONENT = None


def compiled():
    """The engine and the component, compiled once per process."""
    global _ENGINE, _COMPONENT
    if _COMPONENT is None:
        _ENGINE = wasmtime.Engine()
        _COMPONENT = wc.Component.from_file(_ENGINE, component_path())
    return _ENGINE, _COMPONENT


def record(**fields):
    r = wc.Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


def is_error(value):
    return isinstance(value, wc.Variant)


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


class Runner:
    def __init__(self, scenario):
        self.scenario = scenario
        st = scenario.get("storage", {})
        self.plog = {o: [tuple(v) for v in vals] for o, vals in st.get("plog", [])}
        for e in st.get("plog_events", []):
            offset, vals = event_values(e)
            if offset in self.plog:
                raise StepFailed(f"[{RUNNER}] scenario {scenario['name']}: two PLog events at offset {offset}")
            self.plog[offset] = vals
        self.view = {(w, s): v for w, s, v in st.get("view", [])}
        self.next_offset = st.get("next_offset", 0)
        self.writes = 0
        self.page_events = scenario.get("page_events", 100)
        self.faults = {"fail_writes": 0, "fail_reads": 0, "fail_number_reads": 0}
        self.hold = False
        self.queue = []  # (kind, op, args)
        self.now = 0
        self.wake = None
        self.store = None
        self.handle = None
        self.funcs = {}
        engine, self.component = compiled()
        self.linker = wc.Linker(engine)
        self.linker.add_wasip2()
        with self.linker.root() as root:
            with root.add_instance("sequencer:plugin/storage@0.2.0") as s:
                s.add_func("read-numbers", self._read_numbers)
                s.add_func("read-numbers-many", self._read_numbers_many)
                s.add_func("begin-read-next-offset", lambda _s, op: self.queue.append(("read-next-offset", op, ())))
                s.add_func("begin-write", lambda _s, op, vals, nxt: self.queue.append(
                    ("write", op, ([(v.ws, v.seq, v.value) for v in vals], nxt))))
                s.add_func("begin-read-plog", lambda _s, op, first: self.queue.append(("read-plog", op, (first,))))
            with root.add_instance("sequencer:plugin/clock@0.2.0") as c:
                c.add_func("now", lambda _s: self.now)
                c.add_func("set-wake", self._set_wake)
            with root.add_instance("sequencer:plugin/observer@0.2.0") as o:
                o.add_func("status-changed", lambda _s, status: None)

    # ---- imports ----------------------------------------------------------------------------

    def _read_numbers(self, _store, ws, seqs):
        if self.faults["fail_number_reads"] > 0:
            self.faults["fail_number_reads"] -= 1
            return "injected read-numbers failure"  # a str is the `err` case (untagged result)
        return [self.view.get((ws, s), 0) for s in seqs]

    def _read_numbers_many(self, _store, ws_list, seqs):
        if self.faults["fail_number_reads"] > 0:
            self.faults["fail_number_reads"] -= 1
            return "injected read-numbers failure"
        return [self.view.get((ws, s), 0) for ws in ws_list for s in seqs]

    def _set_wake(self, _store, at):
        self.wake = at

    # ---- calls ------------------------------------------------------------------------------

    def _call(self, name, *args):
        f = self.funcs[name]
        r = f(self.store, self.handle, *args)
        f.post_return(self.store)
        return r

    def _instantiate(self):
        self.store = wasmtime.Store(self.linker.engine)
        self.store.set_wasi(wasmtime.WasiConfig())
        inst = self.linker.instantiate(self.store, self.component)
        api = inst.get_export_index(self.store, API)
        events = inst.get_export_index(self.store, EVENTS)
        self.funcs = {}
        for kind, names in (("static", ["create"]), ("method", ["start", "next", "flush", "actualize", "cleanup",
                                                                "status", "held-numbers", "deliver", "pump",
                                                                "start-next"])):
            for n in names:
                idx = inst.get_export_index(self.store, f"[{kind}]sequencer.{n}", api)
                self.funcs[n] = inst.get_func(self.store, idx)
        for n in ("system-params", "start-event", "next-rec-id", "next-c-rec-id", "finish-event", "cancel-event",
                  "status"):
            self.funcs[f"events.{n}"] = inst.get_func(self.store, inst.get_export_index(self.store, n, events))

    def _system_params(self, rec):
        f = self.funcs["events.system-params"]
        r = f(self.store, rec)
        f.post_return(self.store)
        return r

    def _create(self, params):
        rec = guest_params(params)
        self.queue.clear()
        self.wake = None
        self._instantiate()
        if params.get("system"):
            rec = self._system_params(rec)
        create = self.funcs["create"]
        r = create(self.store, rec)
        create.post_return(self.store)
        if is_error(r):
            self.handle = None
            return r
        self.handle = r
        return None

    @staticmethod
    def _outcome(o):
        if o == "written":
            return None
        if "next_offset" in o:
            return o["next_offset"]
        if "failed" in o:
            return o["failed"]
        page = o["plog_page"]
        values = [record(offset=a, ws=b, seq=c, value=d) for a, b, c, d in page["values"]]
        return record(values=values, next=page["next"], end=page["end"])

    def call(self, step):
        name = step["call"]
        if name == "create":
            return self._create(step.get("params", self.scenario.get("params", {})))
        if name == "system_params":
            old = self.store, self.funcs  # a fresh instance, leaving the sequencer's alone
            self._instantiate()
            p = self._system_params(guest_params(step["params"]))
            self.store, self.funcs = old
            out = {k: getattr(p, k.replace("_", "-"))
                   for k in ("max_unflushed_values", "lru_cache_size", "retry_jitter_percent")}
            for k in ("batcher_delay", "retry_delay", "max_retry_delay"):
                out[f"{k}_ms"] = getattr(p, f"{k}_ns".replace("_", "-")) // MS
            out["kinds"] = sorted([k.kind, sorted(list(s) for s in k.sequences)] for k in p.kinds)
            return out
        if self.handle is None:
            raise StepFailed("no sequencer: a `create` step must come first")
        if name == "start":
            r = self._call("start", step["kind"], step["ws"])
            return r if is_error(r) else start_outcome(r)
        if name == "start_next":
            r = self._call("start-next", step["kind"], step["ws"], list(step["seqs"]))
            if is_error(r):
                return r
            out = start_outcome(r[0])
            out["numbers"] = list(r[1])
            return out
        if name == "next":
            return self._call("next", step["seq"])
        if name in ("flush", "actualize", "pump"):
            return self._call(name)
        if name == "cleanup":
            self._call("cleanup")
            self.queue.clear()
            self.wake = None
            return None
        if name == "status":
            return self._call("status")
        if name == "held_numbers":
            h = self._call("held-numbers")
            return {k: getattr(h, k) for k in ("cached", "unflushed", "transaction")}
        if name == "deliver":
            self.queue = [q for q in self.queue if q[1] != step["op"]]
            return self._call("deliver", step["op"], self._outcome(step["outcome"]))
        if name == "start_event":
            r = self._call("events.start-event", step["ws"])
            if is_error(r) or isinstance(r, str):  # untagged: a str is the `not-now` reason
                return r if is_error(r) else {"not_now": r}
            return {"started": {"plog": getattr(r, "plog-offset"), "wlog": getattr(r, "wlog-offset")}}
        if name in ("next_rec_id", "next_c_rec_id", "finish_event", "cancel_event"):
            return self._call("events." + name.replace("_", "-"))
        if name == "event_status":
            return self._call("events.status")
        raise StepFailed(f"unknown call {name!r}")

    # ---- the task driver ----------------------------------------------------------------------

    def _runnable(self):
        for i, (kind, _op, _a) in enumerate(self.queue):
            if kind == "write" and self.hold:
                continue
            if kind == "read-next-offset" and any(q[0] == "write" for q in self.queue[:i]):
                continue
            return i
        return None

    def _perform(self, kind, args):
        if kind == "write":
            if self.faults["fail_writes"] > 0:
                self.faults["fail_writes"] -= 1
                return "injected write failure"
            values, nxt = args
            for w, s, v in values:
                self.view[(w, s)] = v
            self.next_offset = nxt
            self.writes += 1
            return None
        if self.faults["fail_reads"] > 0:
            self.faults["fail_reads"] -= 1
            return f"injected {kind} failure"
        if kind == "read-next-offset":
            return self.next_offset
        first = args[0]
        offsets = sorted(o for o in self.plog if o >= first)[: self.page_events]
        values = [record(offset=o, ws=w, seq=s, value=v) for o in offsets for w, s, v in self.plog[o]]
        nxt = offsets[-1] + 1 if offsets else first
        return record(values=values, next=nxt, end=not any(o >= nxt for o in self.plog))

    def run_tasks(self, step):
        limit = step.get("max")
        performed = 0
        while limit is None or performed < limit:
            i = self._runnable()
            if i is None:
                break
            kind, op, args = self.queue.pop(i)
            outcome = self._perform(kind, args)
            performed += 1
            r = self._call("deliver", op, outcome)
            if is_error(r):
                raise StepFailed(f"deliver of {kind} op {op} was refused: {r.tag} {r.payload!r}")
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
            r = self.call(step)
            if "expect_error" in step:
                if not is_error(r):
                    raise StepFailed(f"expected error {step['expect_error']}, got success {r!r}")
                if r.tag != step["expect_error"]:
                    raise StepFailed(f"expected error {step['expect_error']}, got {r.tag} {r.payload!r}")
                return
            if is_error(r):
                raise StepFailed(f"refused: {r.tag} {r.payload!r}")
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
            self.now += step["advance_ms"] * MS
            if self.wake is not None and self.now >= self.wake:
                self.wake = None
                self._call("pump")
        elif "hold_writes" in step:
            self.hold = bool(step["hold_writes"])
        elif "fault" in step:
            for k, v in step["fault"].items():
                if k not in self.faults:
                    raise StepFailed(f"unknown fault {k!r}")
                self.faults[k] = v
        elif "append" in step or "append_event" in step:
            offset, values = step["append"] if "append" in step else event_values(step["append_event"])
            expected = max(self.plog) + 1 if self.plog else 1
            if offset != expected:
                raise StepFailed(f"append at {offset}: the PLog's next offset is {expected}")
            self.plog[offset] = [tuple(v) for v in values]
        elif "expect_storage" in step:
            self.expect_storage(step["expect_storage"])
        elif "expect_pending" in step:
            self.expect_pending(step["expect_pending"])
        elif "expect_wake_ms" in step:
            want = step["expect_wake_ms"]
            got = None if self.wake is None else self.wake / MS
            if got != want:
                raise StepFailed(f"expected wake at {want} ms, got {got}")
        elif "expect_wake_within_ms" in step:
            lo, hi = step["expect_wake_within_ms"]
            got = None if self.wake is None else self.wake / MS
            if got is None or not lo <= got <= hi:
                raise StepFailed(f"expected a wake-up within [{lo}, {hi}] ms, got {got}")
        else:
            raise StepFailed("unknown step")

    def expect_storage(self, want):
        for key, value in want.items():
            if key == "view":
                got = sorted([w, s, v] for (w, s), v in self.view.items())
                ok = got == sorted(value)
            elif key == "next_offset":
                got, ok = self.next_offset, self.next_offset == value
            elif key == "writes":
                got, ok = self.writes, self.writes == value
            elif key == "plog_next":
                got = max(self.plog) + 1 if self.plog else 1
                ok = got == value
            elif key == "consistent":
                got = all(self.view.get((w, s), 0) >= v
                          for o, vals in self.plog.items() if o < self.next_offset for w, s, v in vals)
                ok = got == value
            else:
                raise StepFailed(f"unknown storage check {key!r}")
            if not ok:
                raise StepFailed(f"storage {key}: expected {json.dumps(value)}, got {json.dumps(got)}")

    def expect_pending(self, want):
        got = []
        for kind, op, args in self.queue:
            entry = {"kind": kind, "op": op}
            if kind == "write":
                entry["values"] = sorted([list(v) for v in args[0]])
                entry["next_offset"] = args[1]
            elif kind == "read-plog":
                entry["first"] = args[0]
            got.append(entry)
        ok = len(got) == len(want) and all(
            all((sorted(v) if k == "values" else v) == g.get(k) for k, v in w.items()) for w, g in zip(want, got))
        if not ok:
            raise StepFailed(f"expected pending {json.dumps(want)}, got {json.dumps(got)}")

    def run(self):
        for i, step in enumerate(self.scenario["steps"]):
            self.step(step, f"steps[{i}]")


def guest_params(params):
    p = dict(DEFAULTS, **params)
    kinds = [record(kind=k, sequences=[tuple(s) for s in seqs]) for k, seqs in p.get("kinds", [])]
    return record(kinds=kinds, max_unflushed_values=p["max_unflushed_values"],
                  lru_cache_size=p["lru_cache_size"], batcher_delay_ns=p["batcher_delay_ms"] * MS,
                  retry_delay_ns=p["retry_delay_ms"] * MS, max_retry_delay_ns=p["max_retry_delay_ms"] * MS,
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
    # `start-outcome` is untagged too: an int is `started`, a str is the `not-now` reason.
    return {"started": r} if isinstance(r, int) else {"not_now": r}


def scenario_files():
    return sorted(SCENARIOS.glob("*.json"))


def load(path):
    scenario = json.loads(Path(path).read_text())
    scenario["name"] = Path(path).stem
    return scenario


def run_scenario(path):
    Runner(load(path)).run()
