"""Loading and linking the component (`Plugin`), and one sequencer over it (`Sequencer`).

The wrapper only converts: every rule of the sequencer is in the component. What it adds is
the host's part of the contract: it links `storage`, `clock` and `observer` to Python objects,
defines std's unused WASI imports as traps (as the Rust host does), keeps the storage work the
guest begins in a queue and performs it on request, keeps the wake-up the guest asks for, and
turns refusals into `SequencerError` and traps into `Trapped`.
"""

from __future__ import annotations

import hashlib
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import wasmtime
from wasmtime import component as wc

from ._types import (WIT_VERSION, BatchNumbers, EventOffsets, Failed, HeldNumbers, NextOffset, NotNow,
                     NotNowReason, Operation, Outcome, Params, PlogPage, SeqValue, SequenceStatus, Status,
                     Written)
from .errors import LoadError, SequencerError, Trapped
from .storage import Clock, MonotonicClock, Observer, Storage

API = f"sequencer:plugin/sequencer-api@{WIT_VERSION}"
EVENTS = f"sequencer:plugin/events@{WIT_VERSION}"
STORAGE = f"sequencer:plugin/storage@{WIT_VERSION}"
CLOCK = f"sequencer:plugin/clock@{WIT_VERSION}"
OBSERVER = f"sequencer:plugin/observer@{WIT_VERSION}"

DEFAULT_FUEL_PER_CALL = 1_000_000_000
"""Fuel given to each guest call (the Rust host's default): a call that burns it all traps."""

DEFAULT_MAX_MEMORY_BYTES = 256 * 1024 * 1024
"""The guest's linear-memory cap (the Rust host's default)."""

_METHODS = ("start", "next", "flush", "actualize", "cleanup", "status", "held-numbers", "deliver", "pump",
            "start-next", "flush-start-next", "start-next-quad", "flush-start-next-quad", "stage", "start-batch",
            "flush-start-batch")
_EVENT_FUNCS = ("system-params", "start-event", "next-rec-id", "next-c-rec-id", "finish-event", "cancel-event",
                "status")
_BITS = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}


def bundled_component() -> Path:
    """The path of the component shipped inside this package (`sequencer.wasm`)."""
    return Path(__file__).resolve().parent / "sequencer.wasm"


def bundled_wit() -> Path:
    """The path of the component's WIT package shipped inside this package."""
    return Path(__file__).resolve().parent / "wit" / "sequencer.wit"


def _int(what: str, value: Any, ty: str) -> int:
    """`value` as a WIT unsigned integer of type `ty`, or `ValueError` naming `what`
    (wasmtime-py would silently truncate an out-of-range int)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    if not 0 <= value < 1 << _BITS[ty]:
        raise ValueError(f"{what} must be a {ty} (0..{(1 << _BITS[ty]) - 1}), got {value}")
    return value


def _record(**fields: Any) -> wc.Record:
    """A WIT record: attributes named as in the WIT (kebab-case)."""
    r = wc.Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


def _field(r: Any, name: str) -> Any:
    return getattr(r, name.replace("_", "-"))


def _params_record(p: Params) -> wc.Record:
    kinds = [_record(kind=_int("a kind", k, "u16"),
                     sequences=[(_int(f"a sequence of kind {k}", s, "u16"),
                                 _int(f"the first number of kind {k} sequence {s}", first, "u64"))
                                for s, first in seqs.items()])
             for k, seqs in p.kind_table().items()]
    return _record(kinds=kinds,
                   max_unflushed_values=_int("max_unflushed_values", p.max_unflushed_values, "u32"),
                   lru_cache_size=_int("lru_cache_size", p.lru_cache_size, "u32"),
                   batcher_delay_ns=_int("batcher_delay_ns", p.batcher_delay_ns, "u64"),
                   retry_delay_ns=_int("retry_delay_ns", p.retry_delay_ns, "u64"),
                   max_retry_delay_ns=_int("max_retry_delay_ns", p.max_retry_delay_ns, "u64"),
                   retry_jitter_percent=_int("retry_jitter_percent", p.retry_jitter_percent, "u8"))


def _params_from(r: Any) -> Params:
    return Params(kinds={k.kind: dict(k.sequences) for k in r.kinds},
                  **{f: _field(r, f) for f in ("max_unflushed_values", "lru_cache_size", "batcher_delay_ns",
                                               "retry_delay_ns", "max_retry_delay_ns", "retry_jitter_percent")})


def _quad(seqs: Sequence[int]) -> wc.Record:
    if len(seqs) > 4:
        raise ValueError(f"at most four sequences, got {len(seqs)}")
    s = [_int("a sequence", q, "u16") for q in seqs] + [0] * (4 - len(seqs))
    return _record(count=len(seqs), s0=s[0], s1=s[1], s2=s[2], s3=s[3])


def _outcome_value(o: Outcome) -> Any:
    """An `Outcome` in wasmtime-py's untagged form of the WIT `outcome` variant."""
    if isinstance(o, Written):
        return None
    if isinstance(o, NextOffset):
        return _int("the next offset", o.offset, "u64")
    if isinstance(o, Failed):
        return str(o.message)
    if isinstance(o, PlogPage):
        values = [_record(offset=_int("a PLog value's offset", v[0], "u64"), ws=_int("a PLog value's ws", v[1], "u64"),
                          seq=_int("a PLog value's seq", v[2], "u16"), value=_int("a PLog value", v[3], "u64"))
                  for v in o.values]
        return _record(values=values, next=_int("the page's next", o.next, "u64"), end=bool(o.end))
    raise TypeError(f"not an outcome: {o!r} (Written, NextOffset, PlogPage or Failed)")


def _start(r: Any) -> Union[int, NotNow]:
    # `start-outcome` comes back untagged: an int is `started`, a str the `not-now` reason.
    return r if isinstance(r, int) else NotNow(NotNowReason(r))


def _refusal(v: wc.Variant) -> SequencerError:
    payload = v.payload
    if isinstance(payload, wc.Record):
        payload = dict(vars(payload))
    return SequencerError(v.tag, payload)


class Plugin:
    """The sequencer component, compiled once; `open` makes sequencers over it.

    `path` is a component file (default: the one bundled in this package). Each guest call gets
    `fuel_per_call` fuel (None: unmetered) and the guest's memory is capped at
    `max_memory_bytes` (None: uncapped); exhausting either traps (`Trapped`). Raises
    `LoadError` if the file is missing, is not a component, or does not export
    `sequencer:plugin@0.3.0`."""

    def __init__(self, path: Union[str, Path, None] = None, *,
                 fuel_per_call: Optional[int] = DEFAULT_FUEL_PER_CALL,
                 max_memory_bytes: Optional[int] = DEFAULT_MAX_MEMORY_BYTES):
        self.path = Path(path) if path is not None else bundled_component()
        self.fuel_per_call = fuel_per_call
        self.max_memory_bytes = max_memory_bytes
        try:
            data = self.path.read_bytes()
        except OSError as e:
            hint = " (this package was built without its component)" if path is None else ""
            raise LoadError(f"{self.path}: cannot read the component: {e.strerror or e}{hint}") from None
        self.sha256 = hashlib.sha256(data).hexdigest()
        config = wasmtime.Config()
        config.consume_fuel = fuel_per_call is not None
        self.engine = wasmtime.Engine(config)
        try:
            self.component = wc.Component(self.engine, data)
        except wasmtime.WasmtimeError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else "unknown error"
            raise LoadError(f"{self.path} is not a WebAssembly component: {first}") from None
        ty = self.component.type
        exports = sorted(ty.exports(self.engine))
        if API not in exports or EVENTS not in exports:
            names = ", ".join(exports) or "nothing"
            raise LoadError(f"{self.path} does not export {API} and {EVENTS} (it exports {names}):"
                            f" this package wraps sequencer:plugin@{WIT_VERSION}")
        self.imports: List[str] = sorted(ty.imports(self.engine))
        """Every import of the component, as `package/interface@version`."""
        api = self.component.get_export_index(API)
        events = self.component.get_export_index(EVENTS)
        found = {"create": self.component.get_export_index("[static]sequencer.create", api)}
        for m in _METHODS:
            found[m] = self.component.get_export_index(f"[method]sequencer.{m}", api)
        for f in _EVENT_FUNCS:
            found[f"events.{f}"] = self.component.get_export_index(f, events)
        missing = [n for n, i in found.items() if i is None]
        if missing:
            raise LoadError(f"{self.path} lacks {', '.join(missing)} of sequencer:plugin@{WIT_VERSION}")
        self._index: Dict[str, wc.ExportIndex] = {n: i for n, i in found.items() if i is not None}

    def open(self, params: Params, storage: Storage, *, clock: Optional[Clock] = None,
             observer: Optional[Observer] = None) -> "Sequencer":
        """A new sequencer (its own instance) over `storage`. It starts actualizing at once: it
        queues its first storage work before returning; `Sequencer.run_until_ready` (or
        `run_tasks`) performs it. `clock` defaults to `MonotonicClock()`. Raises
        `SequencerError("invalid-params")` for invalid params."""
        return Sequencer(self, params, storage, clock or MonotonicClock(), observer)

    def system_params(self, base: Params) -> Params:
        """`base` with the facade's system sequences added (docs/DESIGN.md §5.2: workspace kind
        0, the WLog offset and the record ids), its limits kept: the params of a sequencer for
        the `events` calls (`start_event`, ...)."""
        inst = _Instance(self, _NoHost())
        return _params_from(inst.call("events.system-params", _params_record(base)))


class _NoHost:
    """The imports of an instance that never creates a sequencer (`system_params`)."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def refuse(*_args: Any) -> Any:
            raise wasmtime.WasmtimeError(f"import {name} called by an instance without a sequencer")
        return refuse


class _Instance:
    """One store and instance of the component, its imports bound to `host`'s methods
    (`_import_<name>`).

    wasmtime-py keeps each import's Python function in a global table until the store drops
    it, and the store lives as long as `host` holds this instance: the functions therefore
    reach `host` through a weak reference, or no sequencer would ever be freed."""

    def __init__(self, plugin: Plugin, host: Any):
        self.plugin = plugin
        self.host = host
        ref = weakref.ref(host)

        def bind(method: str) -> Callable[..., Any]:
            def call(*args: Any) -> Any:
                target = ref()
                if target is None:
                    raise wasmtime.WasmtimeError(f"import {method} called after its sequencer was freed")
                return getattr(target, f"_import_{method}")(*args)
            return call

        linker = wc.Linker(plugin.engine)
        with linker.root() as root:
            with root.add_instance(STORAGE) as s:
                for name in ("read-numbers", "read-numbers-many", "begin-read-next-offset", "begin-write",
                             "begin-read-plog"):
                    s.add_func(name, bind(name.replace("-", "_")))
            with root.add_instance(CLOCK) as c:
                c.add_func("now", bind("now"))
                c.add_func("set-wake", bind("set_wake"))
            with root.add_instance(OBSERVER) as o:
                o.add_func("status-changed", bind("status_changed"))
        # std on wasm32-wasip2 imports parts of WASI the sequencer never calls; a call (only a
        # guest panic would make one) traps, as in the Rust host.
        linker.define_unknown_imports_as_traps(plugin.component)
        self.store = wasmtime.Store(plugin.engine)
        if plugin.max_memory_bytes is not None:
            self.store.set_limits(memory_size=plugin.max_memory_bytes)
        self._fuel()
        instance = linker.instantiate(self.store, plugin.component)
        self.funcs: Dict[str, wc.Func] = {}
        for name, idx in plugin._index.items():
            func = instance.get_func(self.store, idx)
            if func is None:
                raise LoadError(f"{plugin.path}: the instance has no function {name}")
            self.funcs[name] = func

    def _fuel(self) -> None:
        if self.plugin.fuel_per_call is not None:
            self.store.set_fuel(self.plugin.fuel_per_call)

    def call(self, name: str, *args: Any) -> Any:
        """Calls export `name` (a trap raises `wasmtime.WasmtimeError`)."""
        f = self.funcs[name]
        self._fuel()
        r = f(self.store, *args)
        f.post_return(self.store)
        return r


class Sequencer:
    """One partition's sequencer: one instance of the component (`Plugin.open` makes one).

    The transaction calls (`start`, `next`, `flush`, ...) are the WIT's, in snake_case: a
    refusal raises `SequencerError` (with the WIT error case as `code`), "not now" is returned
    as `NotNow`. The guest begins storage work inside any call; it waits in `pending` until the
    host performs it (`run_tasks`, `perform`) or reports it by hand (`deliver`). The wake-up
    the guest asked for is `wake_at` (nanoseconds on the clock): call `pump` then (`run_tasks`
    does when it has come). Not thread-safe: one thread at a time per sequencer. A trap raises
    `Trapped`, and every later call does too. Usable as a context manager (`cleanup` on exit).
    """

    def __init__(self, plugin: Plugin, params: Params, storage: Storage, clock: Clock,
                 observer: Optional[Observer]):
        self.plugin = plugin
        self.storage = storage
        self.clock = clock
        self.observer = observer
        self.pending: List[Operation] = []
        """The storage operations begun and not yet performed or delivered, in the order begun."""
        self.wake_at: Optional[int] = None
        """When the guest asked to be pumped (nanoseconds on `clock`), or None."""
        self.reported_status: Optional[Status] = None
        """The status the guest last reported through the observer import."""
        self.last_failure: Optional[str] = None
        """The message of the last storage operation that failed, if any."""
        self._trap: Optional[str] = None
        self._cause: Optional[BaseException] = None
        self._handle = None
        record = _params_record(params)
        self._inst = self._guarded(lambda: _Instance(plugin, self))
        r = self._call("create", record, method=False)
        if isinstance(r, wc.Variant):
            raise _refusal(r)
        self._handle = r

    # ---- the imports (called by the guest) -----------------------------------------------------

    def _host_fault(self, what: str, e: BaseException) -> wasmtime.WasmtimeError:
        self._cause = e
        return wasmtime.WasmtimeError(f"the host's {what} raised {type(e).__name__}: {e}")

    def _numbers(self, what: str, read: Callable[[], Sequence[int]]) -> Union[List[int], str]:
        # A storage failure is the `err` case (a str, since results come back untagged); so is a
        # value that is not a u64, which wasmtime-py would truncate.
        try:
            numbers = list(read())
            for n in numbers:
                _int(f"a number returned by {what}", n, "u64")
        except Exception as e:  # the storage's failure, reported to the guest as the contract says
            return f"{what} failed: {type(e).__name__}: {e}"
        return numbers

    def _import_read_numbers(self, _store: Any, ws: int, seqs: List[int]) -> Union[List[int], str]:
        """The import `storage.read-numbers`: `storage.read_numbers` at once."""
        return self._numbers("read_numbers", lambda: self.storage.read_numbers(ws, list(seqs)))

    def _import_read_numbers_many(self, _store: Any, ws: List[int], seqs: List[int]) -> Union[List[int], str]:
        """The import `storage.read-numbers-many`: `storage.read_numbers_many` at once, or
        `read_numbers` per workspace if the storage has no `read_numbers_many`."""
        many = getattr(self.storage, "read_numbers_many", None)
        if many is None:
            return self._numbers("read_numbers",
                                 lambda: [n for w in ws for n in self.storage.read_numbers(w, list(seqs))])
        return self._numbers("read_numbers_many", lambda: many(list(ws), list(seqs)))

    def _import_begin_read_next_offset(self, _store: Any, op: int) -> None:
        """The import `storage.begin-read-next-offset`: queued."""
        self.pending.append(Operation(op, "read-next-offset"))

    def _import_begin_write(self, _store: Any, op: int, words: List[int], next_plog_offset: int) -> None:
        """The import `storage.begin-write`: its flat words (workspace, sequence, number per
        value) read as values, then queued. Words that are not values trap the call (only a
        broken guest sends them), as in the Rust host."""
        if len(words) % 3 != 0 or any(s > 0xFFFF for s in words[1::3]):
            raise wasmtime.WasmtimeError(
                "storage.begin-write: malformed write: not whole values of 3 words with 16-bit sequences")
        values = tuple(SeqValue(words[i], words[i + 1], words[i + 2]) for i in range(0, len(words), 3))
        self.pending.append(Operation(op, "write", values, next_offset=next_plog_offset))

    def _import_begin_read_plog(self, _store: Any, op: int, first: int) -> None:
        """The import `storage.begin-read-plog`: queued."""
        self.pending.append(Operation(op, "read-plog", first=first))

    def _import_now(self, _store: Any) -> int:
        """The import `clock.now`: `clock.now()` (a clock that raises or returns a non-u64 traps)."""
        try:
            return _int("clock.now()", self.clock.now(), "u64")
        except Exception as e:
            raise self._host_fault("clock", e) from None

    def _import_set_wake(self, _store: Any, at: Optional[int]) -> None:
        """The import `clock.set-wake`: kept in `wake_at`."""
        self.wake_at = at

    def _import_status_changed(self, _store: Any, status: str) -> None:
        """The import `observer.status-changed`: kept in `reported_status`, then passed to the
        observer (an observer that raises traps)."""
        self.reported_status = Status(status)
        if self.observer is not None:
            try:
                self.observer.status_changed(self.reported_status)
            except Exception as e:
                raise self._host_fault("observer", e) from None

    # ---- calls ---------------------------------------------------------------------------------

    def _guarded(self, run: Callable[[], Any]) -> Any:
        if self._trap is not None:
            raise Trapped(f"the instance trapped earlier ({self._trap}); open a new sequencer")
        self._cause = None
        try:
            return run()
        except (wasmtime.WasmtimeError, wasmtime.Trap) as e:
            text = str(e).strip()
            # wasmtime's text is a backtrace, then "Caused by:" and the reason.
            head, caused_by, reason = text.partition("Caused by:")
            self._trap = " ".join(reason.split()) if caused_by else (head.splitlines() or [type(e).__name__])[0]
            self.pending.clear()
            self.wake_at = None
            raise Trapped(f"the component trapped: {self._trap}", text) from self._cause

    def _call(self, name: str, *args: Any, method: bool = True) -> Any:
        if method:
            args = (self._handle, *args)
        return self._guarded(lambda: self._inst.call(name, *args))

    def _checked(self, name: str, *args: Any) -> Any:
        r = self._call(name, *args)
        if isinstance(r, wc.Variant):
            raise _refusal(r)
        return r

    def start(self, kind: int, ws: int) -> Union[int, NotNow]:
        """Begin a transaction for workspace `ws` of kind `kind`: the PLog offset of its event,
        or `NotNow` while actualizing or while too many values wait to be written."""
        return _start(self._checked("start", _int("kind", kind, "u16"), _int("ws", ws, "u64")))

    def next(self, seq: int) -> int:
        """The next number of sequence `seq` in the transaction."""
        return int(self._checked("next", _int("seq", seq, "u16")))

    def flush(self) -> None:
        """The transaction's event is in the PLog: consume its offset and numbers."""
        self._checked("flush")

    def actualize(self) -> None:
        """Drop the transaction, if any, and what is unwritten; recover from storage and PLog."""
        self._checked("actualize")

    def stage(self) -> None:
        """End the open event but not the transaction (see the WIT)."""
        self._checked("stage")

    def cleanup(self) -> None:
        """Stop: pending operations and the wake-up are dropped, later calls refused
        (`cleaned-up`). Does nothing on a sequencer that trapped."""
        if self._trap is None:
            self._call("cleanup")
        self.pending.clear()
        self.wake_at = None

    def status(self) -> Status:
        """What the sequencer is doing (asks the guest)."""
        return Status(self._call("status"))

    def held_numbers(self) -> HeldNumbers:
        """Numbers held in memory, by where."""
        h = self._call("held-numbers")
        return HeldNumbers(h.cached, h.unflushed, h.transaction)

    def start_next(self, kind: int, ws: int, seqs: Sequence[int]) -> Tuple[Union[int, NotNow], List[int]]:
        """`start`, then `next` of each of `seqs`: the offset (or `NotNow`, with no numbers) and
        the numbers, in one call."""
        r = self._checked("start-next", _int("kind", kind, "u16"), _int("ws", ws, "u64"),
                          [_int("a sequence", s, "u16") for s in seqs])
        return _start(r[0]), list(r[1])

    def flush_start_next(self, kind: int, ws: int, seqs: Sequence[int]) -> Tuple[Union[int, NotNow], List[int]]:
        """`flush`, then `start_next`, in one call (see the WIT for which errors mean what)."""
        r = self._checked("flush-start-next", _int("kind", kind, "u16"), _int("ws", ws, "u64"),
                          [_int("a sequence", s, "u16") for s in seqs])
        return _start(r[0]), list(r[1])

    def _quad_call(self, name: str, kind: int, ws: int, seqs: Sequence[int]) -> Tuple[Union[int, NotNow], List[int]]:
        r = self._checked(name, _int("kind", kind, "u16"), _int("ws", ws, "u64"), _quad(seqs))
        out = _start(r.outcome)
        return out, ([] if isinstance(out, NotNow) else [r.n0, r.n1, r.n2, r.n3][: len(seqs)])

    def start_next_quad(self, kind: int, ws: int, seqs: Sequence[int]) -> Tuple[Union[int, NotNow], List[int]]:
        """`start_next` for up to four sequences through the call with no lists (the WIT's
        `start-next-quad`)."""
        return self._quad_call("start-next-quad", kind, ws, seqs)

    def flush_start_next_quad(self, kind: int, ws: int,
                              seqs: Sequence[int]) -> Tuple[Union[int, NotNow], List[int]]:
        """`flush_start_next` for up to four sequences (the WIT's `flush-start-next-quad`)."""
        return self._quad_call("flush-start-next-quad", kind, ws, seqs)

    def _batch(self, name: str, kind: int, ws: Sequence[int], seqs: Sequence[int]) -> BatchNumbers:
        r = self._checked(name, _int("kind", kind, "u16"), [_int("a workspace", w, "u64") for w in ws], _quad(seqs))
        not_now = _field(r, "not_now")
        return BatchNumbers(_field(r, "first_offset"), r.started, None if not_now is None else NotNowReason(not_now),
                            tuple(r.numbers))

    def start_batch(self, kind: int, ws: Sequence[int], seqs: Sequence[int]) -> BatchNumbers:
        """Number and stage one event per workspace of `ws` (all of kind `kind`), each taking a
        number of each of up to four `seqs`; stops at the first "not now" (see the WIT)."""
        return self._batch("start-batch", kind, ws, seqs)

    def flush_start_batch(self, kind: int, ws: Sequence[int], seqs: Sequence[int]) -> BatchNumbers:
        """`flush`, then `start_batch`, in one call."""
        return self._batch("flush-start-batch", kind, ws, seqs)

    # ---- the events interface (the facade, docs/DESIGN.md §5) ---------------------------------

    def start_event(self, ws: int) -> Union[EventOffsets, NotNow]:
        """`StartEvent`: begin an event in workspace `ws` (needs params from
        `Plugin.system_params`): its PLog and WLog offsets, or `NotNow`."""
        r = self._checked("events.start-event", _int("ws", ws, "u64"))
        if isinstance(r, str):  # untagged: a str is the `not-now` reason
            return NotNow(NotNowReason(r))
        return EventOffsets(_field(r, "plog_offset"), _field(r, "wlog_offset"))

    def next_rec_id(self) -> int:
        """`NextRecID`: the next O/W document or record id of the event's workspace."""
        return int(self._checked("events.next-rec-id"))

    def next_c_rec_id(self) -> int:
        """`NextCRecID`: the next C document or record id of the event's workspace."""
        return int(self._checked("events.next-c-rec-id"))

    def finish_event(self) -> None:
        """`FinishEvent`: the event is in the PLog."""
        self._checked("events.finish-event")

    def cancel_event(self) -> None:
        """`CancelEvent`: the event failed; recover, then the same ids are handed out again."""
        self._checked("events.cancel-event")

    def event_status(self) -> SequenceStatus:
        """The facade's `Status` (docs/DESIGN.md §5.3)."""
        return SequenceStatus(self._call("events.status"))

    # ---- the tasks -----------------------------------------------------------------------------

    def deliver(self, op: int, outcome: Outcome) -> None:
        """Report the outcome of operation `op`, then the guest begins any work now due; once
        accepted, `op` leaves `pending`. Raises `SequencerError` (`unknown-operation`,
        `wrong-outcome`, `malformed-plog-page`, ...) for a report the guest refuses: the
        operation then stays pending."""
        self._checked("deliver", _int("op", op, "u64"), _outcome_value(outcome))
        self.pending = [p for p in self.pending if p.op != op]

    def pump(self) -> None:
        """Begin any work now due: call when `wake_at` has come (the wake-up is then forgotten
        and the guest asks afresh if it still needs one)."""
        self.wake_at = None
        self._call("pump")

    def perform(self, operation: Operation) -> Outcome:
        """Perform one pending operation through the storage and deliver its outcome; returns
        the outcome. A storage method that raises, or returns what the contract cannot carry,
        is delivered as `Failed(message)` (the guest retries later). The operation leaves
        `pending` first: it is performed once, even if the guest refuses its outcome."""
        self.pending = [p for p in self.pending if p.op != operation.op]
        try:
            outcome: Outcome
            if operation.kind == "write":
                self.storage.write(list(operation.values), operation.next_offset)
                outcome = Written()
            elif operation.kind == "read-next-offset":
                outcome = NextOffset(self.storage.read_next_offset())
            else:
                outcome = self.storage.read_plog(operation.first)
                if not isinstance(outcome, PlogPage):
                    raise TypeError(f"read_plog returned {type(outcome).__name__}, not a PlogPage")
            _outcome_value(outcome)  # a value the contract cannot carry fails here, not in the guest
        except Exception as e:  # the storage's failure, reported to the guest as the contract says
            outcome = Failed(f"{operation.kind} failed: {type(e).__name__}: {e}")
        if isinstance(outcome, Failed):
            self.last_failure = outcome.message
        self._checked("deliver", _int("op", operation.op, "u64"), _outcome_value(outcome))
        return outcome

    def run_tasks(self, limit: Optional[int] = None) -> int:
        """Perform pending operations in the order begun (work begun meanwhile joins the end)
        until none is left, `limit` were performed, or one failed; when none is left, if the
        wake-up has come on the clock, pump once and go on with what that began. Returns how
        many were performed. Bounded: a failed operation's retry and any further pump wait
        for the next call, so a guest retrying at once (a zero retry delay) against a storage
        that always fails cannot keep it looping."""
        performed = 0
        pumped = False
        while limit is None or performed < limit:
            if self.pending:
                performed += 1
                if isinstance(self.perform(self.pending[0]), Failed):
                    break
            elif not pumped and self.wake_at is not None and self.clock.now() >= self.wake_at:
                self.pump()
                pumped = True
            else:
                break
        return performed

    def run_until_ready(self, timeout_s: float = 30.0) -> Status:
        """Run the tasks, sleeping until each wake-up (on the real clock), until the sequencer
        is no longer actualizing; returns its status. Raises `TimeoutError` (naming the last
        storage failure) if it is still actualizing after `timeout_s` seconds."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.run_tasks()
            status = self.status()
            if status != Status.ACTUALIZING:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                why = f"; the last storage failure: {self.last_failure}" if self.last_failure else ""
                raise TimeoutError(f"still actualizing after {timeout_s} s{why}")
            if self.pending:
                continue  # a retry begun at once (a zero retry delay)
            if self.wake_at is None:
                raise RuntimeError("actualizing with no storage work pending and no wake-up asked for")
            time.sleep(min(left, max(0.0, (self.wake_at - self.clock.now()) / 1e9)))

    def __enter__(self) -> "Sequencer":
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.cleanup()
