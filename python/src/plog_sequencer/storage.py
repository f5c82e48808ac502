"""What a host gives the sequencer: storage, a clock and (optionally) an observer, as small
protocols; and an in-memory storage and a monotonic clock to start with.

The guest never waits on storage except for `read_numbers` / `read_numbers_many` (called inside
`start` / `start_batch`, answer promptly). The other operations are queued when the guest
begins them and performed later by `Sequencer.run_tasks` / `Sequencer.perform`, outside any
guest call. A method that raises makes its operation fail: the guest retries it after a delay
(jittered, doubling up to `max_retry_delay_ns`), or `start` raises `SequencerError("storage")`
for a failed numbers read.
"""

from __future__ import annotations

import time
from typing import Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple, runtime_checkable

from ._types import PlogPage, PlogValue, SeqValue, Status


@runtime_checkable
class Storage(Protocol):
    """Storage of one partition: the PLog, the sequences view and the stored next PLog offset
    (the WIT's `storage` interface, with the operations performed synchronously when the host
    runs its tasks)."""

    def read_numbers(self, ws: int, seqs: Sequence[int]) -> Sequence[int]:
        """The stored last numbers of `seqs` in workspace `ws`, in that order, 0 for a key never
        stored. Called inside `start` when the numbers are not in memory."""
        ...

    def read_next_offset(self) -> int:
        """The stored next PLog offset, 0 if none is stored."""
        ...

    def write(self, values: Sequence[SeqValue], next_plog_offset: int) -> None:
        """Make `values` durable, then `next_plog_offset`. Writes are performed in the order the
        guest began them, one at a time."""
        ...

    def read_plog(self, first: int) -> PlogPage:
        """PLog events from offset `first` on, as many as the storage likes (see `PlogPage`)."""
        ...


class NumbersManyReader(Protocol):
    """Optional for a `Storage`: `read_numbers` for several workspaces at once (called inside
    `start_batch`). Without it the wrapper calls `read_numbers` once per workspace."""

    def read_numbers_many(self, ws: Sequence[int], seqs: Sequence[int]) -> Sequence[int]:
        """`len(seqs)` numbers per workspace of `ws`, workspace after workspace."""
        ...


@runtime_checkable
class Clock(Protocol):
    """The host's monotonic clock."""

    def now(self) -> int:
        """Nanoseconds on a monotonic clock; never goes backwards."""
        ...


@runtime_checkable
class Observer(Protocol):
    """What the host learns without asking (the WIT's `observer` interface)."""

    def status_changed(self, status: Status) -> None:
        """The status changed to `status`: called at the end of the guest call that changed it,
        once per change (the first time inside `Plugin.open`)."""
        ...


class MonotonicClock:
    """Real time: `time.monotonic_ns()`."""

    def now(self) -> int:
        """Nanoseconds since an arbitrary point, never going backwards."""
        return time.monotonic_ns()


class MemoryStorage:
    """A `Storage` in memory: the PLog (`plog`: offset -> values), the sequences view (`view`:
    (ws, seq) -> last number), the stored next offset (`next_offset`) and a count of applied
    writes (`writes`). A PLog read returns at most `page_events` events. Nothing survives the
    process; for examples, tests and as a model for a real storage."""

    def __init__(self, plog: Optional[Mapping[int, Iterable[Tuple[int, int, int]]]] = None,
                 view: Optional[Mapping[Tuple[int, int], int]] = None, next_offset: int = 0,
                 page_events: int = 100):
        if page_events < 1:
            raise ValueError(f"page_events must be at least 1, got {page_events}")
        self.plog: Dict[int, List[SeqValue]] = {}
        for offset, values in sorted((plog or {}).items()):
            self.plog[offset] = [SeqValue(*v) for v in values]
        self.view: Dict[Tuple[int, int], int] = dict(view or {})
        self.next_offset = next_offset
        self.page_events = page_events
        self.writes = 0

    # ---- what the command processor does -------------------------------------------------------

    def plog_next(self) -> int:
        """The offset the next appended event must have: the last event's + 1, or 1."""
        return max(self.plog) + 1 if self.plog else 1

    def append(self, offset: int, values: Iterable[Tuple[int, int, int]]) -> None:
        """Append one event to the PLog with its sequence values `(ws, seq, value)`, as the
        command processor does before it flushes; `offset` must be `plog_next()` (the PLog
        stays dense), else `ValueError` and nothing changes."""
        expected = self.plog_next()
        if offset != expected:
            raise ValueError(f"append at offset {offset}: the PLog's next offset is {expected}")
        self.plog[offset] = [SeqValue(*v) for v in values]

    def number(self, ws: int, seq: int) -> int:
        """The stored last number of sequence `seq` of workspace `ws` (0 if none)."""
        return self.view.get((ws, seq), 0)

    # ---- the Storage protocol ------------------------------------------------------------------

    def read_numbers(self, ws: int, seqs: Sequence[int]) -> List[int]:
        """The stored numbers of `seqs` in `ws` (0 for a key never stored)."""
        return [self.view.get((ws, s), 0) for s in seqs]

    def read_numbers_many(self, ws: Sequence[int], seqs: Sequence[int]) -> List[int]:
        """`read_numbers` of each workspace of `ws`, one after another."""
        return [self.view.get((w, s), 0) for w in ws for s in seqs]

    def read_next_offset(self) -> int:
        """The stored next offset (0 if none)."""
        return self.next_offset

    def write(self, values: Sequence[SeqValue], next_plog_offset: int) -> None:
        """Stores every value (replacing its row), then the offset, and counts one write."""
        for v in values:
            self.view[(v.ws, v.seq)] = v.value
        self.next_offset = next_plog_offset
        self.writes += 1

    def read_plog(self, first: int) -> PlogPage:
        """Up to `page_events` events at or after `first`, in offset order."""
        offsets = sorted(o for o in self.plog if o >= first)[: self.page_events]
        values = [PlogValue(o, *v) for o in offsets for v in self.plog[o]]
        nxt = offsets[-1] + 1 if offsets else first
        return PlogPage(values=values, next=nxt, end=not any(o >= nxt for o in self.plog))
