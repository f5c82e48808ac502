//! Misuse probes: calls the sequencer must refuse with their typed error, changing nothing.

use super::*;

impl World<'_> {
    /// A call the sequencer must refuse with a typed error, changing nothing.
    pub(super) fn probe(&mut self) -> Checked {
        let status = self.status()?;
        let held = self.held()?;
        let outstanding: Vec<(u64, Work)> = self
            .pending
            .iter()
            .map(|p| (p.begun.ticket().0, p.begun.clone()))
            .collect();
        let idle = self.cp == Cp::Idle;
        let open = self.tx().is_some_and(|tx| tx.open.is_some());
        let (call, expected) = match self.rng.below(8) {
            0 if !open => (Call::Next { seq: 1 }, Refusal::NoTransaction),
            1 if idle => (Call::Flush, Refusal::NoTransaction),
            0 | 1 if open => (
                Call::Start { kind: 1, ws: 0 },
                Refusal::TransactionInProgress,
            ),
            // Events are staged, none is open.
            0 | 1 => (Call::Stage, Refusal::NoTransaction),
            2 if !open => (
                Call::Start {
                    kind: UNKNOWN_KIND,
                    ws: 0,
                },
                Refusal::UnknownWsKind(UNKNOWN_KIND),
            ),
            3 if !outstanding.is_empty() => {
                let (op, begun) = outstanding[self.rng.index(outstanding.len())].clone();
                match begun {
                    Work::ReadPlog { from, .. } if self.rng.chance(50) => {
                        let page = Delivery::PlogPage {
                            values: vec![(from + 5, SeqValue::new(0, 1, 1))],
                            next: from + 1,
                            end: true,
                        };
                        let call = Call::Deliver { op, outcome: page };
                        let reply = self.call(call, false)?;
                        self.stats.probes += 1;
                        if !matches!(reply, Reply::Done(Err(Refusal::MalformedPlogPage(_)))) {
                            return Err(unexpected("a malformed PLog page", &reply));
                        }
                        return self.unchanged(status, held);
                    }
                    Work::Write(_) => (
                        Call::Deliver {
                            op,
                            outcome: Delivery::NextOffset(1),
                        },
                        Refusal::WrongOutcome(op),
                    ),
                    _ => (
                        Call::Deliver {
                            op,
                            outcome: Delivery::Written,
                        },
                        Refusal::WrongOutcome(op),
                    ),
                }
            }
            6 | 7 => {
                let kind = self.rng.pick(&[1, 2]);
                let ws = vec![0, self.rng.below(self.shape.workspaces)];
                let too_many = Quad {
                    count: self.rng.pick(&[5, 6, 255]),
                    seqs: [1; 4],
                };
                match self.rng.below(6) {
                    0 => (
                        Call::StartBatch {
                            kind: UNKNOWN_KIND,
                            ws,
                            seqs: Quad::of(&[1]),
                        },
                        Refusal::UnknownWsKind(UNKNOWN_KIND),
                    ),
                    1 => (
                        Call::StartBatch {
                            kind,
                            ws,
                            seqs: Quad::of(&[1, UNKNOWN_SEQ]),
                        },
                        Refusal::UnknownSeqId {
                            kind,
                            seq: UNKNOWN_SEQ,
                        },
                    ),
                    2 => {
                        let call = match self.rng.below(4) {
                            0 => Call::StartNextQuad {
                                kind,
                                ws: 0,
                                seqs: too_many,
                            },
                            1 => Call::FlushStartNextQuad {
                                kind,
                                ws: 0,
                                seqs: too_many,
                            },
                            2 => Call::StartBatch {
                                kind,
                                ws,
                                seqs: too_many,
                            },
                            _ => Call::FlushStartBatch {
                                kind,
                                ws,
                                seqs: too_many,
                            },
                        };
                        (call, Refusal::InvalidParams)
                    }
                    3 if idle => {
                        let seqs = Quad::of(&[1]);
                        let call = match self.rng.below(3) {
                            0 => Call::FlushStartNext {
                                kind,
                                ws: 0,
                                seqs: vec![1],
                            },
                            1 => Call::FlushStartNextQuad { kind, ws: 0, seqs },
                            _ => Call::FlushStartBatch { kind, ws, seqs },
                        };
                        (call, Refusal::NoTransaction)
                    }
                    4 if open => (
                        Call::StartBatch {
                            kind,
                            ws,
                            seqs: Quad::of(&[1]),
                        },
                        Refusal::TransactionInProgress,
                    ),
                    _ if open => (
                        Call::StartNextQuad {
                            kind,
                            ws: 0,
                            seqs: Quad::of(&[1]),
                        },
                        Refusal::TransactionInProgress,
                    ),
                    _ => (Call::Stage, Refusal::NoTransaction),
                }
            }
            4 if self.last_delivered.is_some() => {
                let op = self.last_delivered.unwrap_or_default();
                (
                    Call::Deliver {
                        op,
                        outcome: Delivery::Written,
                    },
                    Refusal::UnknownOperation(op),
                )
            }
            _ => {
                let op = (1 << 40) + self.rng.below(1 << 20);
                (
                    Call::Deliver {
                        op,
                        outcome: Delivery::Failed("stray".into()),
                    },
                    Refusal::UnknownOperation(op),
                )
            }
        };
        self.stats.probes += 1;
        let reply = self.call(call.clone(), false)?;
        let refused = match &reply {
            Reply::Start(Err(r))
            | Reply::Number(Err(r))
            | Reply::Done(Err(r))
            | Reply::StartNext(Err(r))
            | Reply::Quad(Err(r))
            | Reply::Batch(Err(r)) => Some(r),
            _ => None,
        };
        if refused != Some(&expected) {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("{call:?} should be refused with {expected:?}, got {reply:?}"),
            ));
        }
        self.unchanged(status, held)
    }

    pub(super) fn unchanged(&mut self, status: Status, held: sequencer::HeldNumbers) -> Checked {
        let (s, h) = (self.status()?, self.held()?);
        if (s, h) != (status, held) {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("a refused call changed the sequencer: {status:?} {held:?} -> {s:?} {h:?}"),
            ));
        }
        Ok(())
    }
}
