//! The WIT's `error` ([`GuestError`], the guest's refusals) beside the core's [`Error`]: the row
//! of the core's [`ErrorKind`] table each case is, its case name, a one-line description, and
//! the case the guest reports a core error as. Every embedding that prints, compares or
//! reproduces refusals (the host, the simulator, the conformance runner) takes them from here,
//! so the mapping is written once on this side of the boundary. (The guest's side,
//! `to_wit_error` in the core's component glue, is its mirror; the lockstep simulation compares
//! the two on every refusal.)

use sequencer::{Error, ErrorKind};

use crate::runtime::bindings::GuestError;
use crate::runtime::bindings::sequencer::plugin::types::SeqRef;

impl GuestError {
    /// The row of the core's [`ErrorKind`] table this refusal is. The WIT folds two kinds into
    /// a case of another's (an invalid argument is reported as `invalid-params`, a ticket as an
    /// operation), so this is the row of the case, never [`ErrorKind::InvalidArgument`] or
    /// [`ErrorKind::UnsafeInteger`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            GuestError::InvalidParams(_) => ErrorKind::InvalidParams,
            GuestError::CleanedUp => ErrorKind::CleanedUp,
            GuestError::TransactionInProgress => ErrorKind::TransactionInProgress,
            GuestError::NoTransaction => ErrorKind::NoTransaction,
            GuestError::UnknownWsKind(_) => ErrorKind::UnknownWsKind,
            GuestError::UnknownSeqId(_) => ErrorKind::UnknownSeqId,
            GuestError::AlreadyActualizing => ErrorKind::AlreadyActualizing,
            GuestError::SequenceExhausted(_) => ErrorKind::SequenceExhausted,
            GuestError::UnknownOperation(_) => ErrorKind::UnknownTicket,
            GuestError::WrongOutcome(_) => ErrorKind::WrongResultKind,
            GuestError::MalformedNumbers(_) => ErrorKind::MalformedNumbers,
            GuestError::MalformedPlogPage(_) => ErrorKind::MalformedPlogPage,
            GuestError::Storage(_) => ErrorKind::Storage,
        }
    }

    /// The case name as the WIT spells it (`unknown-ws-kind`, ...), for messages and
    /// comparisons.
    pub fn case(&self) -> &'static str {
        // Every row `kind` gives has a WIT case (the vocabulary test checks the table against
        // the WIT); the fallback is never taken.
        self.kind().wit_case().unwrap_or("invalid-params")
    }

    /// A one-line description of the refusal.
    pub fn describe(&self) -> String {
        match self {
            GuestError::InvalidParams(m) => format!("invalid params: {m}"),
            GuestError::CleanedUp => "the sequencer was cleaned up".into(),
            GuestError::TransactionInProgress => "a transaction is already in progress".into(),
            GuestError::NoTransaction => "no transaction is in progress".into(),
            GuestError::UnknownWsKind(k) => format!("unknown workspace kind {k}"),
            GuestError::UnknownSeqId(r) => {
                format!("unknown sequence {} for workspace kind {}", r.seq, r.kind)
            }
            GuestError::AlreadyActualizing => "actualization is already in progress".into(),
            GuestError::SequenceExhausted(r) => {
                format!(
                    "sequence {} of workspace kind {} is exhausted",
                    r.seq, r.kind
                )
            }
            GuestError::UnknownOperation(op) => {
                format!("no storage operation {op} is outstanding")
            }
            GuestError::WrongOutcome(op) => format!("wrong kind of outcome for operation {op}"),
            GuestError::MalformedNumbers(m) | GuestError::MalformedPlogPage(m) => m.clone(),
            GuestError::Storage(m) => format!("storage failed: {m}"),
        }
    }
}

/// The refusal the component gives for a core error: what a native engine answers to stand in
/// for the component (the same case and text as the guest's glue reports).
impl From<Error> for GuestError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidParams(p) => GuestError::InvalidParams(p.to_string()),
            Error::CleanedUp => GuestError::CleanedUp,
            Error::TransactionInProgress => GuestError::TransactionInProgress,
            Error::NoTransaction => GuestError::NoTransaction,
            Error::UnknownWsKind(k) => GuestError::UnknownWsKind(k),
            Error::UnknownSeqId { kind, seq } => GuestError::UnknownSeqId(SeqRef { kind, seq }),
            Error::AlreadyActualizing => GuestError::AlreadyActualizing,
            Error::SequenceExhausted { kind, seq } => {
                GuestError::SequenceExhausted(SeqRef { kind, seq })
            }
            Error::UnknownTicket(t) => GuestError::UnknownOperation(t.0),
            Error::WrongResultKind { ticket, .. } => GuestError::WrongOutcome(ticket.0),
            e @ Error::MalformedNumbers { .. } => GuestError::MalformedNumbers(e.to_string()),
            e @ Error::MalformedPlogPage { .. } => GuestError::MalformedPlogPage(e.to_string()),
            Error::Storage(message) => GuestError::Storage(message),
            Error::InvalidArgument(message) => GuestError::InvalidParams(message),
            // Only the JavaScript glue makes it; the WIT's numbers are all exact.
            e @ Error::UnsafeInteger(_) => GuestError::InvalidParams(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use sequencer::{ParamsError, Ticket};

    use super::*;

    /// One core error of every kind.
    fn every_core_error() -> Vec<Error> {
        vec![
            Error::InvalidParams(ParamsError::NoWorkspaceKinds),
            Error::CleanedUp,
            Error::TransactionInProgress,
            Error::NoTransaction,
            Error::UnknownWsKind(3),
            Error::UnknownSeqId { kind: 1, seq: 2 },
            Error::AlreadyActualizing,
            Error::SequenceExhausted { kind: 1, seq: 2 },
            Error::UnknownTicket(Ticket(7)),
            Error::WrongResultKind {
                ticket: Ticket(7),
                expected: "a write",
            },
            Error::MalformedNumbers {
                expected: 2,
                got: 1,
            },
            Error::MalformedPlogPage {
                from: 1,
                reason: "bad",
            },
            Error::Storage("down".into()),
            Error::InvalidArgument("count".into()),
            Error::UnsafeInteger("too big".into()),
        ]
    }

    #[test]
    fn a_core_error_crosses_as_the_case_its_kind_names() {
        for e in every_core_error() {
            let expected = e.kind().wit_case().unwrap_or("invalid-params");
            let guest = GuestError::from(e.clone());
            assert_eq!(guest.case(), expected, "{e:?}");
            assert_eq!(guest.kind().wit_case(), Some(expected), "{e:?}");
        }
    }

    #[test]
    fn every_refusal_has_a_description_of_its_own_in_one_line() {
        let mut seen = std::collections::HashSet::new();
        for e in every_core_error() {
            let guest = GuestError::from(e);
            let line = guest.describe();
            assert!(
                !line.is_empty() && !line.contains('\n'),
                "{guest:?}: {line:?}"
            );
            assert!(seen.insert(line.clone()), "{guest:?}: {line:?} told twice");
        }
    }
}
