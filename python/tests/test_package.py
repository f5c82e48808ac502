"""The package's own promises, against the component bundled in the installed wheel: what it
links, how refusals, traps, storage failures and bad input surface, and the task model. The
contract's behaviours themselves are the conformance scenarios (the Python runner runs them
through this package)."""

import gc
import hashlib
import os
import weakref
from pathlib import Path

import pytest

import plog_sequencer as ps

PARAMS = ps.Params(kinds={1: {1: 1, 2: 100}}, retry_jitter_percent=0)


@pytest.fixture(scope="module")
def plugin():
    return ps.Plugin()


class ManualClock:
    def __init__(self):
        self.ns = 0

    def now(self):
        return self.ns


class Recorder:
    def __init__(self):
        self.statuses = []

    def status_changed(self, status):
        self.statuses.append(status)


def ready(plugin, storage=None, **kw):
    seq = plugin.open(PARAMS, storage if storage is not None else ps.MemoryStorage(), **kw)
    assert seq.run_until_ready(timeout_s=10) == ps.Status.READY
    return seq


def test_the_bundled_component_is_the_one_just_built(plugin):
    built = os.environ.get("SEQUENCER_COMPONENT")
    if not built:
        pytest.skip("SEQUENCER_COMPONENT is not set (scripts/test-conformance.sh sets it)")
    assert plugin.sha256 == hashlib.sha256(Path(built).read_bytes()).hexdigest(), \
        "the installed wheel bundles another component than the one built: rebuild it (scripts/build-plugin.sh)"


def test_the_wheel_ships_the_component_and_its_wit():
    assert ps.bundled_component().stat().st_size > 0
    wit = ps.bundled_wit().read_text()
    assert f"package {ps.WIT_PACKAGE};" in wit


def test_the_component_imports_its_three_interfaces_and_only_what_std_imports(plugin):
    ours = [i for i in plugin.imports if i.startswith("sequencer:")]
    assert ours == [f"sequencer:plugin/{n}@{ps.WIT_VERSION}" for n in ("clock", "observer", "storage", "types")]
    others = [i for i in plugin.imports if not i.startswith("sequencer:")]
    # What std on wasm32-wasip2 imports (the repository's list); never called.
    text = (Path(__file__).resolve().parents[2] / "guest-tests" / "std-imports.txt").read_text()
    std_wasi = tuple(l for l in text.splitlines() if l and not l.startswith("#"))
    assert std_wasi and others and all(i.startswith(std_wasi) for i in others), others


def test_a_transaction_numbers_flushes_and_the_flusher_writes_values_then_offset(plugin):
    storage = ps.MemoryStorage(plog={42: [(1000, 1, 13)]})
    seq = ready(plugin, storage)
    offset = seq.start(1, 1000)
    assert (offset, seq.next(1), seq.next(2)) == (43, 14, 100)
    storage.append(offset, [(1000, 1, 14), (1000, 2, 100)])
    writes = storage.writes  # the actualization stored what it replayed (event 42)
    seq.flush()
    assert [p.kind for p in seq.pending] == ["write"]
    assert sorted(seq.pending[0].values) == [ps.SeqValue(1000, 1, 14), ps.SeqValue(1000, 2, 100)]
    assert seq.pending[0].next_offset == 43
    assert seq.run_tasks() == 1
    assert (storage.number(1000, 1), storage.number(1000, 2), storage.next_offset) == (14, 100, 43)
    assert storage.writes == writes + 1


def test_write_words_that_are_not_values_trap_and_queue_nothing(plugin):
    seq = ready(plugin)
    pending = list(seq.pending)
    for words in ([1000, 1], [1000, 1 << 16, 5]):
        with pytest.raises(Exception, match="malformed write"):
            seq._import_begin_write(None, 9, words, 43)
    assert list(seq.pending) == pending
    seq._import_begin_write(None, 9, [1000, 1, 14, 1000, 2, 100], 43)
    assert seq.pending[-1].values == (ps.SeqValue(1000, 1, 14), ps.SeqValue(1000, 2, 100))


def test_a_refused_call_raises_sequencer_error_with_the_wit_code_and_changes_nothing(plugin):
    seq = ready(plugin)
    with pytest.raises(ps.SequencerError) as e:
        seq.next(1)
    assert e.value.code == "no-transaction"
    assert seq.start(1, 7) == 1
    with pytest.raises(ps.SequencerError) as e:
        seq.next(9)
    assert (e.value.code, e.value.detail) == ("unknown-seq-id", {"kind": 1, "seq": 9})
    with pytest.raises(ps.SequencerError) as e:
        seq.start(1, 8)
    assert e.value.code == "transaction-in-progress"
    assert seq.next(1) == 1, "the refusals changed nothing"


def test_invalid_params_are_refused_by_open(plugin):
    with pytest.raises(ps.SequencerError) as e:
        plugin.open(ps.Params(kinds={}), ps.MemoryStorage())
    assert e.value.code == "invalid-params" and "kind" in e.value.detail


@pytest.mark.parametrize("call, message", [
    (lambda s: s.start(1, -1), "ws must be a u64"),
    (lambda s: s.start(70_000, 1), "kind must be a u16"),
    (lambda s: s.start(1, 2 ** 64), "ws must be a u64"),
    (lambda s: s.start_batch(1, [1], [1, 2, 1, 2, 1]), "at most four sequences"),
])
def test_an_argument_out_of_range_is_a_value_error_not_a_truncated_number(plugin, call, message):
    seq = ready(plugin)
    with pytest.raises(ValueError, match=message):
        call(seq)
    assert seq.status() == ps.Status.READY


def test_a_trap_surfaces_as_trapped_and_the_instance_stays_dead(plugin):
    metered = ps.Plugin(plugin.path)
    storage = ps.MemoryStorage()
    seq = ready(metered, storage)
    metered.fuel_per_call = 10  # the next call runs out of fuel inside the guest
    with pytest.raises(ps.Trapped, match="^the component trapped: wasm trap: all fuel consumed"):
        seq.start(1, 1)
    with pytest.raises(ps.Trapped, match="trapped earlier"):
        seq.start(1, 1)
    seq.cleanup()  # a no-op on a dead instance, so `with` blocks exit cleanly
    metered.fuel_per_call = ps.DEFAULT_FUEL_PER_CALL
    again = ready(metered, storage)
    assert again.start(1, 1) == 1, "a new sequencer over the same storage works"


def test_a_guest_out_of_memory_traps_through_the_wasi_stub_and_surfaces_as_trapped(plugin):
    small = ps.Plugin(plugin.path, max_memory_bytes=2 << 20)
    seq = small.open(ps.Params(kinds={1: {1: 1}}, max_unflushed_values=100_000), ps.MemoryStorage())
    seq.run_until_ready(timeout_s=10)
    with pytest.raises(ps.Trapped) as e:
        seq.start_batch(1, range(5000), [1])  # 5,000 cold workspaces do not fit in 2 MiB
    # std reports the failed allocation on stderr, a WASI import linked as a trap
    assert "wasi:cli/stderr" in str(e.value) and "backtrace" in e.value.wasm_error
    assert seq.pending == [] and seq.wake_at is None


def test_an_observer_that_raises_traps_with_its_exception_as_the_cause(plugin):
    class Broken:
        def status_changed(self, status):
            if status == ps.Status.IN_TRANSACTION:
                raise KeyError("observer bug")

    seq = ready(plugin, observer=Broken())
    with pytest.raises(ps.Trapped) as e:
        seq.start(1, 1)
    assert isinstance(e.value.__cause__, KeyError)
    assert str(e.value) == "the component trapped: the host's observer raised KeyError: 'observer bug'"


def test_a_clock_that_raises_traps_with_its_exception_as_the_cause(plugin):
    class Broken:
        def now(self):
            raise OSError("no clock")

    seq = plugin.open(PARAMS, ps.MemoryStorage(), clock=Broken())
    with pytest.raises(ps.Trapped) as e:
        seq.run_until_ready(timeout_s=10)  # reporting a PLog page asks the clock
    assert isinstance(e.value.__cause__, OSError)


def test_the_observer_hears_every_status_change(plugin):
    rec = Recorder()
    storage = ps.MemoryStorage()
    seq = ready(plugin, storage, observer=rec)
    storage.append(seq.start(1, 1), [(1, 1, seq.next(1))])
    seq.flush()
    assert rec.statuses == ["actualizing", "ready", "in-transaction", "ready"]
    assert seq.reported_status == ps.Status.READY


def test_a_failed_numbers_read_raises_storage_and_the_next_start_works(plugin):
    class Flaky(ps.MemoryStorage):
        fail = True

        def read_numbers(self, ws, seqs):
            if self.fail:
                self.fail = False
                raise ConnectionError("view unreachable")
            return super().read_numbers(ws, seqs)

    seq = ready(plugin, Flaky(view={(5, 1): 41}))
    with pytest.raises(ps.SequencerError) as e:
        seq.start(1, 5)
    assert e.value.code == "storage" and "ConnectionError: view unreachable" in e.value.detail
    assert seq.start(1, 5) == 1 and seq.next(1) == 42


def test_numbers_a_storage_cannot_hold_are_a_storage_error_not_truncated(plugin):
    class Negative(ps.MemoryStorage):
        def read_numbers(self, ws, seqs):
            return [-1 for _ in seqs]

    seq = ready(plugin, Negative())
    with pytest.raises(ps.SequencerError) as e:
        seq.start(1, 5)
    assert e.value.code == "storage" and "must be a u64" in e.value.detail


def test_a_failed_write_is_retried_at_the_wake_up_and_nothing_is_lost(plugin):
    class FailOnce(ps.MemoryStorage):
        fails = 1

        def write(self, values, next_plog_offset):
            if self.fails:
                self.fails -= 1
                raise OSError("disk full")
            super().write(values, next_plog_offset)

    clock = ManualClock()
    storage = FailOnce()
    seq = ready(plugin, storage, clock=clock)
    storage.append(seq.start(1, 3), [(3, 1, seq.next(1))])
    seq.flush()
    assert seq.run_tasks() == 1
    assert "disk full" in seq.last_failure and storage.writes == 0
    assert seq.wake_at == PARAMS.retry_delay_ns, "the retry waits the retry delay (no jitter here)"
    assert seq.run_tasks() == 0, "nothing is due before the wake-up"
    clock.ns = seq.wake_at
    assert seq.run_tasks() == 1
    assert (storage.number(3, 1), storage.next_offset, storage.writes) == (1, 1, 1)


def test_a_refused_delivery_leaves_the_operation_pending(plugin):
    seq = plugin.open(PARAMS, ps.MemoryStorage())
    [op] = seq.pending
    with pytest.raises(ps.SequencerError) as e:
        seq.deliver(op.op, ps.Written())
    assert e.value.code == "wrong-outcome"
    assert seq.pending == [op]
    seq.deliver(op.op, ps.NextOffset(0))
    assert [p.kind for p in seq.pending] == ["read-plog"]


def test_cleanup_drops_pending_work_and_later_calls_are_refused(plugin):
    with plugin.open(PARAMS, ps.MemoryStorage()) as seq:
        assert seq.pending
    assert seq.pending == [] and seq.wake_at is None
    with pytest.raises(ps.SequencerError) as e:
        seq.start(1, 1)
    assert e.value.code == "cleaned-up"


def test_a_restart_recovers_from_the_plog_and_reissues_nothing(plugin):
    storage = ps.MemoryStorage()
    seq = ready(plugin, storage)
    for _ in range(3):
        offset = seq.start(1, 9)
        storage.append(offset, [(9, 1, seq.next(1))])
        seq.flush()
    # no run_tasks: the flusher never wrote; the numbers are only in the PLog
    again = ready(plugin, storage)
    assert (again.start(1, 9), again.next(1)) == (4, 4)


def test_batches_and_quads_convert_both_ways(plugin):
    seq = ready(plugin)
    b = seq.start_batch(1, [1, 2, 1], [1, 2])
    assert b == ps.BatchNumbers(first_offset=1, started=3, not_now=None, numbers=(1, 100, 1, 100, 2, 101))
    seq.actualize()
    assert seq.start_next_quad(1, 5, [2]) == (ps.NotNow(ps.NotNowReason.ACTUALIZING), [])
    seq.run_until_ready(timeout_s=10)
    assert seq.start_next_quad(1, 5, [2, 1]) == (1, [100, 1])


def test_the_facade_numbers_events_with_system_params(plugin):
    params = plugin.system_params(ps.Params())
    assert params.kinds[0] == {1: 1, 2: 322680000131072, 3: 322685000131072}
    seq = plugin.open(params, ps.MemoryStorage())
    assert seq.event_status() == ps.SequenceStatus.RECOVER
    assert seq.start_event(5) == ps.NotNow(ps.NotNowReason.ACTUALIZING)
    seq.run_until_ready(timeout_s=10)
    assert seq.start_event(5) == ps.EventOffsets(plog_offset=1, wlog_offset=1)
    assert (seq.next_rec_id(), seq.next_c_rec_id()) == (322680000131072, 322685000131072)


def test_load_errors_say_what_is_wrong(tmp_path, plugin):
    with pytest.raises(ps.LoadError, match="cannot read"):
        ps.Plugin(tmp_path / "missing.wasm")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ps.LoadError, match="not a WebAssembly component"):
        ps.Plugin(text)
    empty = tmp_path / "empty.wasm"
    empty.write_text("(component)")  # wasmtime accepts the text format: a component exporting nothing
    with pytest.raises(ps.LoadError, match=f"does not export .* this package wraps sequencer:plugin@{ps.WIT_VERSION}"):
        ps.Plugin(empty)


def test_memory_storage_keeps_the_plog_dense():
    storage = ps.MemoryStorage(plog={42: [(1, 1, 1)]})
    with pytest.raises(ValueError, match="next offset is 43"):
        storage.append(45, [])
    storage.append(43, [(1, 1, 2)])
    assert storage.read_plog(43) == ps.PlogPage(values=[ps.PlogValue(43, 1, 1, 2)], next=44, end=True)


def test_run_tasks_stops_at_a_failure_so_a_storage_that_always_fails_cannot_keep_it_looping(plugin):
    class Down(ps.MemoryStorage):
        def read_next_offset(self):
            raise ConnectionError("down")

    params = ps.Params(kinds={1: {1: 1}}, retry_delay_ns=0, max_retry_delay_ns=0)
    seq = plugin.open(params, Down(), clock=ManualClock())
    assert seq.run_tasks() == 1
    assert [p.kind for p in seq.pending] == ["read-next-offset"], "retried at once: left for the next call"
    assert seq.run_tasks() == 1
    with pytest.raises(TimeoutError, match="ConnectionError: down"):
        seq.run_until_ready(timeout_s=0.05)


def test_a_dropped_sequencer_is_freed_with_its_instance(plugin):
    refs = []
    for _ in range(5):
        seq = ready(plugin)
        refs.append(weakref.ref(seq))
        del seq
    gc.collect()
    assert [r() for r in refs] == [None] * 5, "wasmtime-py's table of imports must not keep sequencers alive"
