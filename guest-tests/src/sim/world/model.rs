//! The model: what the command processor's transaction holds and what the PLog says every
//! next number and offset must be (the invariants NumberNeverReissued, NumbersIncrease,
//! NumbersDense are checked here, number by number).

use super::*;

impl World<'_> {
    /// The transaction in progress, if any.
    pub(super) fn tx(&self) -> Option<&Tx> {
        match &self.cp {
            Cp::Tx(tx) => Some(tx),
            Cp::Idle => None,
        }
    }

    pub(super) fn tx_mut(&mut self) -> Option<&mut Tx> {
        match &mut self.cp {
            Cp::Tx(tx) => Some(tx),
            Cp::Idle => None,
        }
    }

    /// The offset the next event of the transaction must get: the PLog's next, after the
    /// events already staged (none of which is in the PLog yet).
    pub(super) fn expected_offset(&self) -> PLogOffset {
        let staged = self.tx().map_or(0, |tx| tx.staged.len() as u64);
        self.io.storage.mem.plog_next() + staged
    }

    /// Distinct keys among the staged events' numbers: what the sequencer holds staged.
    pub(super) fn staged_keys(&self) -> usize {
        let Some(tx) = self.tx().filter(|tx| !tx.staged.is_empty()) else {
            return 0;
        };
        let mut keys: Vec<NumberKey> = tx
            .staged
            .iter()
            .flat_map(|e| e.values.iter().map(|v| v.key))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.len()
    }

    /// The last number issued for `key`: in the transaction's events, or in the PLog.
    pub(super) fn last_issued(&self, key: NumberKey) -> Option<u64> {
        let in_tx = self.tx().and_then(|tx| {
            tx.events()
                .flat_map(|e| e.values.iter())
                .filter(|v| v.key == key)
                .map(|v| v.value)
                .max()
        });
        in_tx.max(self.plog_max.get(&key).copied())
    }

    /// What `next` of `seq` gives next in `ws`, by the model.
    pub(super) fn expected_next(&self, kind: u16, ws: u64, seq: u16) -> Result<u64, Refusal> {
        match self.last_issued(NumberKey { ws, seq }) {
            Some(l) => l
                .checked_add(1)
                .ok_or(Refusal::SequenceExhausted { kind, seq }),
            None => Ok(initial(kind, seq)),
        }
    }

    /// What the model says events taking a `next` of each of `seqs`, one per workspace of
    /// `ws`, get: the numbers, or the first refusal.
    pub(super) fn model_numbers(
        &self, kind: u16, ws: &[u64], seqs: &[u16],
    ) -> Result<Vec<u64>, Refusal> {
        let mut local: BTreeMap<NumberKey, u64> = BTreeMap::new();
        let mut out = Vec::with_capacity(ws.len() * seqs.len());
        for &w in ws {
            for &seq in seqs {
                if !kind_seqs(kind).iter().any(|(s, _)| *s == seq) {
                    return Err(Refusal::UnknownSeqId { kind, seq });
                }
                let key = NumberKey { ws: w, seq };
                let n = match local.get(&key) {
                    Some(l) => l
                        .checked_add(1)
                        .ok_or(Refusal::SequenceExhausted { kind, seq })?,
                    None => self.expected_next(kind, w, seq)?,
                };
                local.insert(key, n);
                out.push(n);
            }
        }
        Ok(out)
    }

    /// Checks a number issued for the event being numbered (the open one, or the last staged
    /// one while a batch is checked) against the model, and records it in that event.
    pub(super) fn check_number(
        &mut self, kind: u16, ws: u64, seq: u16, got: Result<u64, Refusal>,
    ) -> Checked {
        let key = NumberKey { ws, seq };
        if self.tx().is_none() {
            return Err(violation(
                Invariant::HostContract,
                "a number outside a transaction",
            ));
        }
        let expected = self.expected_next(kind, ws, seq);
        let n = match (got, &expected) {
            (Ok(n), _) => n,
            (Err(r), Err(e)) if r == *e => {
                self.stats.exhausted += 1;
                return Ok(());
            }
            (Err(r), _) => return Err(unexpected_refusal("next", &r)),
        };
        if let Some(&in_plog) = self.plog_max.get(&key)
            && n <= in_plog
        {
            let offset = self
                .io
                .storage
                .mem
                .plog
                .iter()
                .find(|(_, e)| e.iter().any(|v| v.key == key && v.value == n))
                .map(|(o, _)| *o);
            return Err(violation(
                Invariant::NumberNeverReissued,
                format!(
                    "next gave {n} for ws {ws} seq {seq}; the PLog holds it{} (largest {in_plog})",
                    offset
                        .map(|o| format!(" at offset {o}"))
                        .unwrap_or_default()
                ),
            ));
        }
        if let Some(&last) = self.epoch_last.get(&key)
            && n <= last
        {
            return Err(violation(
                Invariant::NumbersIncrease,
                format!("next gave {n} for ws {ws} seq {seq} after {last} in the same life"),
            ));
        }
        if Ok(n) != expected {
            return Err(violation(
                Invariant::NumbersDense,
                format!("next gave {n} for ws {ws} seq {seq}, the model expects {expected:?}"),
            ));
        }
        self.epoch_last.insert(key, n);
        self.stats.numbers += 1;
        if let Some(tx) = self.tx_mut() {
            let event = match &mut tx.open {
                Some((_, e)) => Some(e),
                None => tx.staged.last_mut(),
            };
            if let Some(e) = event {
                e.values.push(SeqValue::new(ws, seq, n));
            }
        }
        Ok(())
    }
}
