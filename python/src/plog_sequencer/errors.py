"""The package's exceptions. A refused call raises `SequencerError` with the contract's error
code (the WIT `error` case); a trap raises `Trapped`; a file that is not this component raises
`LoadError`. All derive from `PluginError`."""

from __future__ import annotations

from typing import Any, Optional


class PluginError(Exception):
    """Anything this package raises on its own account."""


class LoadError(PluginError):
    """The component could not be loaded: a missing file, not a component, or a component that
    does not export the `sequencer:plugin` version this package wraps."""


class SequencerError(PluginError):
    """A call the sequencer refused; its state is unchanged (see the WIT for the exceptions
    that say otherwise, e.g. `start_batch`). `code` is the WIT `error` case (`no-transaction`,
    `unknown-seq-id`, ...); `detail` is its payload: a message (str),
    a kind (int), a `{"kind": k, "seq": s}` dict, an operation id (int), or None."""

    def __init__(self, code: str, detail: Optional[Any] = None):
        self.code = code
        self.detail = detail
        super().__init__(code if detail is None else f"{code}: {detail}")


class Trapped(PluginError):
    """The component trapped (fuel or memory exhausted, a guest panic, or a host callback,
    such as the clock or the observer, that raised: then `__cause__` is that exception). The
    instance is gone: every later call on its `Sequencer` raises `Trapped` again. Open a new
    sequencer over the same storage: it actualizes, so no number is reused. The message names
    the reason; `wasm_error` is wasmtime's whole text, with the guest's backtrace."""

    def __init__(self, message: str, wasm_error: str = ""):
        self.wasm_error = wasm_error
        super().__init__(message)
