//! An answer of the WIT's `instance` interface made whole ([`Explained`]): a refusal comes back
//! with the full error the guest's `last-error` gives for it.

use super::bindings::{GuestError, HeldNumbers, Refusal, Status};
use super::exports::Exports;

/// An answer of the WIT's `instance` interface made whole: a refusal replaced by the full error
/// `last-error` gives for it (one more call, on refusals only), every other answer as it is.
pub trait Explained: Sized {
    /// The answer of the `sequencer` resource's method of the same name.
    type Full;
    /// `self`, with a refusal explained by `plugin`'s `last-error` in `store`; an error if that
    /// call traps, or if the guest refused without keeping an error (a broken guest).
    fn explained(
        self, plugin: &Exports, store: impl wasmtime::AsContextMut,
    ) -> wasmtime::Result<Self::Full>;
}

impl<T> Explained for Result<T, Refusal> {
    type Full = Result<T, GuestError>;

    fn explained(
        self, plugin: &Exports, store: impl wasmtime::AsContextMut,
    ) -> wasmtime::Result<Self::Full> {
        match self {
            Ok(answer) => Ok(Ok(answer)),
            Err(refusal) => match plugin.sequencer_plugin_instance().call_last_error(store)? {
                Some(error) => Ok(Err(error)),
                None => Err(wasmtime::format_err!(
                    "the guest refused a call ({refusal:?}) without keeping its error"
                )),
            },
        }
    }
}

macro_rules! explained_as_is {
    ($($t:ty),*) => {
        $(impl Explained for $t {
            type Full = $t;

            fn explained(
                self,
                _: &Exports,
                _: impl wasmtime::AsContextMut,
            ) -> wasmtime::Result<$t> {
                Ok(self)
            }
        })*
    };
}

explained_as_is!(Status, HeldNumbers, ());
