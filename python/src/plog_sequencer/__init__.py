"""The sequencer as a Python package: dense, monotonic numbers per workspace (PLog offsets,
WLog offsets, record ids) for an event-sourced command processor, recovered from the PLog
after a failure.

The numbering is done by the sequencer's WASI component (bundled in this package, contract
`sequencer:plugin@0.3.0`) under wasmtime; this package links it to Python objects and converts
types. Start with::

    from plog_sequencer import MemoryStorage, Params, Plugin

    plugin = Plugin()                                   # the bundled component, compiled once
    storage = MemoryStorage()                           # or any object of the Storage protocol
    with plugin.open(Params(kinds={1: {1: 1}}), storage) as seq:
        seq.run_until_ready()                           # actualize: read the offset, replay the PLog
        offset = seq.start(1, 1000)                     # kind 1, workspace 1000: the event's offset
        number = seq.next(1)                            # the next number of sequence 1
        storage.append(offset, [(1000, 1, number)])     # the command processor writes its event
        seq.flush()
        seq.run_tasks()                                 # the flusher writes the number, then the offset
"""

from ._plugin import (DEFAULT_FUEL_PER_CALL, DEFAULT_MAX_MEMORY_BYTES, Plugin, Sequencer, bundled_component,
                      bundled_wit)
from ._types import (MS, WIT_PACKAGE, WIT_VERSION, BatchNumbers, EventOffsets, Failed, HeldNumbers, NextOffset,
                     NotNow, NotNowReason, Operation, OperationKind, Outcome, Params, PlogPage, PlogValue,
                     SequenceStatus, SeqValue, Status, Written)
from .errors import LoadError, PluginError, SequencerError, Trapped
from .storage import Clock, MemoryStorage, MonotonicClock, NumbersManyReader, Observer, Storage

__version__ = "0.1.0"
"""The package's version (pyproject.toml's)."""

__all__ = [
    "DEFAULT_FUEL_PER_CALL", "DEFAULT_MAX_MEMORY_BYTES", "MS", "WIT_PACKAGE", "WIT_VERSION", "BatchNumbers", "Clock",
    "EventOffsets", "Failed", "HeldNumbers", "LoadError", "MemoryStorage", "MonotonicClock", "NextOffset", "NotNow",
    "NotNowReason", "NumbersManyReader", "Observer", "Operation", "OperationKind", "Outcome", "Params", "PlogPage",
    "PlogValue", "Plugin", "PluginError", "SequenceStatus", "Sequencer", "SequencerError", "SeqValue", "Status",
    "Storage", "Trapped", "Written", "bundled_component", "bundled_wit",
]
