"""The contract's types in Python shape: what the wrapper takes and gives back. Each mirrors a
type of `wit/sequencer.wit` (package `sequencer:plugin@0.3.0`); names are the WIT's in
snake_case, enum values are the WIT's case names."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, Literal, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

WIT_VERSION = "0.3.0"
"""The version of the WIT package this wrapper is written against (`sequencer:plugin@0.3.0`)."""

WIT_PACKAGE = f"sequencer:plugin@{WIT_VERSION}"
"""The WIT package the bundled component implements."""

MS = 1_000_000
"""Nanoseconds per millisecond (the contract's durations and clock are in nanoseconds)."""


class Status(str, Enum):
    """What the sequencer is doing (the WIT's `status`)."""

    ACTUALIZING = "actualizing"
    READY = "ready"
    IN_TRANSACTION = "in-transaction"
    CLEANED_UP = "cleaned-up"


class SequenceStatus(str, Enum):
    """The facade's `SequenceStatus` (docs/DESIGN.md §5.3; the `events` interface's
    `sequence-status`)."""

    NONE = "none"
    RECOVER = "recover"
    READY = "ready"
    EVENTING = "eventing"
    FINISHED = "finished"


class NotNowReason(str, Enum):
    """Why a start said "not now" (the WIT's `not-now-reason`)."""

    ACTUALIZING = "actualizing"
    TOO_MANY_UNFLUSHED = "too-many-unflushed"


@dataclass(frozen=True)
class NotNow:
    """A start that did not begin: nothing changed; try again later (after `run_tasks`)."""

    reason: NotNowReason


class SeqValue(NamedTuple):
    """The last number issued for one sequence of one workspace (the WIT's `seq-value`)."""

    ws: int
    seq: int
    value: int


class PlogValue(NamedTuple):
    """One value of one PLog event (the WIT's `plog-value`)."""

    offset: int
    ws: int
    seq: int
    value: int


@dataclass(frozen=True)
class PlogPage:
    """A run of PLog events read from a requested offset (the WIT's `plog-page`): their values
    in offset order, `next` the offset after the last event read (the requested one if none
    was), `end` true when no event exists at or after `next`. Also the outcome of a
    `read-plog` operation."""

    values: Sequence[PlogValue]
    next: int
    end: bool


@dataclass(frozen=True)
class Written:
    """The outcome of a `write` operation: the values, then the offset, are durable."""


@dataclass(frozen=True)
class NextOffset:
    """The outcome of a `read-next-offset` operation: the stored offset (0 if none)."""

    offset: int


@dataclass(frozen=True)
class Failed:
    """The outcome of a failed operation: the guest retries it after a delay if it still
    needs it."""

    message: str


Outcome = Union[Written, NextOffset, PlogPage, Failed]
"""What `Sequencer.deliver` reports for an operation (the WIT's `outcome`)."""

OperationKind = Literal["read-next-offset", "write", "read-plog"]
"""The storage work the guest begins (`storage.begin-*`)."""


@dataclass(frozen=True)
class Operation:
    """One storage operation the guest began and waits for: `op` is its id for `deliver`.
    A `write` carries `values` and `next_offset` (values durable before the offset); a
    `read-plog` carries `first`, the offset to read from."""

    op: int
    kind: OperationKind
    values: Tuple[SeqValue, ...] = ()
    next_offset: int = 0
    first: int = 0


@dataclass(frozen=True)
class HeldNumbers:
    """How many numbers the sequencer holds, by where (the WIT's `held-numbers`)."""

    cached: int
    unflushed: int
    transaction: int


@dataclass(frozen=True)
class BatchNumbers:
    """The reply of `start_batch` / `flush_start_batch`: `started` events numbered and staged
    from `first_offset` on, one after another; `not_now` says why the next was not started, if
    one was not; `numbers` holds len(seqs) numbers per started event, event after event."""

    first_offset: int
    started: int
    not_now: Optional[NotNowReason]
    numbers: Tuple[int, ...]


@dataclass(frozen=True)
class EventOffsets:
    """The offsets of an event that began (`start_event`)."""

    plog_offset: int
    wlog_offset: int


@dataclass
class Params:
    """Construction parameters (the WIT's `params`). `kinds` maps a workspace kind to its
    sequences, each with the first number it hands out (at least 1):
    `{1: {1: 1, 2: 100}}` is kind 1 with sequence 1 from 1 and sequence 2 from 100. The
    defaults are the core's. Durations are in nanoseconds."""

    kinds: Mapping[int, Mapping[int, int]] = field(default_factory=dict)
    max_unflushed_values: int = 500
    lru_cache_size: int = 100_000
    batcher_delay_ns: int = 5 * MS
    retry_delay_ns: int = 500 * MS
    max_retry_delay_ns: int = 10_000 * MS
    retry_jitter_percent: int = 50

    def kind_table(self) -> Dict[int, Dict[int, int]]:
        """`kinds` as plain dicts, sorted by kind and sequence."""
        return {k: dict(sorted(self.kinds[k].items())) for k in sorted(self.kinds)}
