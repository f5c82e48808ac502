//! One vocabulary: each enum that crosses a boundary has one table here, from which every
//! language's names are taken or against which they are checked. The WIT's case names
//! (`wit/sequencer.wit`), the JavaScript package's error codes and status strings, and its
//! type declarations (`js/src/index.d.ts`) are compared with these tables by tests
//! (`guest-tests/tests/vocabulary.rs`, `js/test/vocabulary.test.js`), so a name added in one
//! place and not another fails a test.
//!
//! Adding an error variant: add it to [`Error`] and a row to the [`ErrorKind`] table; the
//! compiler then asks for its conversion in each glue (`component.rs`, `js.rs`, the host's
//! and the simulator's), and the tests ask for its WIT case and its JavaScript class.

use crate::error::Error;
use crate::facade::SequenceStatus;
use crate::sequencer::Status;
use crate::work::{NotNowReason, Work};

/// Defines [`ErrorKind`] from one table: variant, stable code (JavaScript), WIT case.
macro_rules! error_kinds {
    ($($(#[$doc:meta])* $kind:ident => $code:literal, $wit:expr;)*) => {
        /// What kind of refusal an [`Error`] is, without its details: the row of the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($(#[$doc])* $kind,)*
        }

        impl ErrorKind {
            /// Every kind, in table order.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind,)*];

            /// The stable code (the JavaScript package's `err.code`).
            pub const fn code(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $code,)*
                }
            }

            /// The case of the WIT's `error` variant it is reported as, if any (some kinds
            /// exist in one glue only).
            pub const fn wit_case(self) -> Option<&'static str> {
                match self {
                    $(ErrorKind::$kind => $wit,)*
                }
            }
        }
    };
}

error_kinds! {
    /// [`Error::InvalidParams`].
    InvalidParams => "INVALID_PARAMS", Some("invalid-params");
    /// [`Error::CleanedUp`].
    CleanedUp => "CLEANED_UP", Some("cleaned-up");
    /// [`Error::TransactionInProgress`].
    TransactionInProgress => "TRANSACTION_IN_PROGRESS", Some("transaction-in-progress");
    /// [`Error::NoTransaction`].
    NoTransaction => "NO_TRANSACTION", Some("no-transaction");
    /// [`Error::UnknownWsKind`].
    UnknownWsKind => "UNKNOWN_WS_KIND", Some("unknown-ws-kind");
    /// [`Error::UnknownSeqId`].
    UnknownSeqId => "UNKNOWN_SEQ_ID", Some("unknown-seq-id");
    /// [`Error::AlreadyActualizing`].
    AlreadyActualizing => "ALREADY_ACTUALIZING", Some("already-actualizing");
    /// [`Error::SequenceExhausted`].
    SequenceExhausted => "SEQUENCE_EXHAUSTED", Some("sequence-exhausted");
    /// [`Error::UnknownTicket`] (the WIT names tickets operations).
    UnknownTicket => "UNKNOWN_TICKET", Some("unknown-operation");
    /// [`Error::WrongResultKind`].
    WrongResultKind => "WRONG_RESULT_KIND", Some("wrong-outcome");
    /// [`Error::MalformedNumbers`].
    MalformedNumbers => "MALFORMED_NUMBERS", Some("malformed-numbers");
    /// [`Error::MalformedPlogPage`].
    MalformedPlogPage => "MALFORMED_PLOG_PAGE", Some("malformed-plog-page");
    /// [`Error::Storage`].
    Storage => "STORAGE", Some("storage");
    /// [`Error::InvalidArgument`] (the WIT reports it as invalid params).
    InvalidArgument => "INVALID_ARGUMENT", Some("invalid-params");
    /// [`Error::UnsafeInteger`] (JavaScript only).
    UnsafeInteger => "UNSAFE_INTEGER", None;
}

impl Error {
    /// The row of the [`ErrorKind`] table this error belongs to.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidParams(_) => ErrorKind::InvalidParams,
            Error::CleanedUp => ErrorKind::CleanedUp,
            Error::TransactionInProgress => ErrorKind::TransactionInProgress,
            Error::NoTransaction => ErrorKind::NoTransaction,
            Error::UnknownWsKind(_) => ErrorKind::UnknownWsKind,
            Error::UnknownSeqId { .. } => ErrorKind::UnknownSeqId,
            Error::AlreadyActualizing => ErrorKind::AlreadyActualizing,
            Error::SequenceExhausted { .. } => ErrorKind::SequenceExhausted,
            Error::UnknownTicket(_) => ErrorKind::UnknownTicket,
            Error::WrongResultKind { .. } => ErrorKind::WrongResultKind,
            Error::MalformedNumbers { .. } => ErrorKind::MalformedNumbers,
            Error::MalformedPlogPage { .. } => ErrorKind::MalformedPlogPage,
            Error::Storage(_) => ErrorKind::Storage,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::UnsafeInteger(_) => ErrorKind::UnsafeInteger,
        }
    }
}

/// Defines `ALL` and the WIT name of a fieldless enum from one table.
macro_rules! wit_names {
    ($ty:ident { $($variant:ident => $wit:literal,)* }) => {
        impl $ty {
            /// Every value, in the WIT's order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant,)*];

            /// Its case name in the WIT.
            pub const fn wit_name(self) -> &'static str {
                match self {
                    $($ty::$variant => $wit,)*
                }
            }
        }
    };
}

wit_names!(Status {
    Actualizing => "actualizing",
    Ready => "ready",
    InTransaction => "in-transaction",
    CleanedUp => "cleaned-up",
});

wit_names!(NotNowReason {
    Actualizing => "actualizing",
    TooManyUnflushed => "too-many-unflushed",
});

wit_names!(SequenceStatus {
    None => "none",
    Recover => "recover",
    Ready => "ready",
    Eventing => "eventing",
    Finished => "finished",
});

impl Status {
    /// Its name in the JavaScript package (`'closed'` for a cleaned-up sequencer, which the
    /// package calls closing).
    pub const fn js_name(self) -> &'static str {
        match self {
            Status::CleanedUp => "closed",
            other => other.wit_name(),
        }
    }
}

impl Work {
    /// The kind of work, as the contract names its `begin-*` import (and the conformance
    /// suite its pending operations).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Work::Write(_) => "write",
            Work::ReadNextOffset { .. } => "read-next-offset",
            Work::ReadPlog { .. } => "read-plog",
        }
    }
}
