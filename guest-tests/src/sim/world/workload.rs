//! The command processor's workload: transactions of single events and batches through every
//! form of the calls, their PLog appends, and the check of each reply against the model.

use super::*;

impl World<'_> {
    pub(super) fn command(&mut self) -> Checked {
        let Cp::Tx(tx) = &self.cp else {
            return self.begin(false);
        };
        let open = tx.open.as_ref().map(|(kind, e)| (*kind, e.ws));
        match (tx.appended, open) {
            (Some(true), _) => {
                if self.calm || self.rng.chance(50) {
                    let reply = self.call(Call::Flush, false)?;
                    expect_done(&reply, "flush")?;
                    self.stats.flushed += 1;
                    self.cp = Cp::Idle;
                    Ok(())
                } else {
                    self.begin(true)
                }
            }
            (Some(false), _) => {
                let call = self.actualize_call();
                let reply = self.call(call, false)?;
                expect_done(&reply, "actualize after a failed PLog write")?;
                self.actualized();
                Ok(())
            }
            (None, Some((kind, ws))) if tx.nexts_left > 0 => self.next_number(kind, ws),
            (None, Some(_)) if !self.calm && self.rng.chance(35) => self.stage(),
            // Events are staged and none is open: number more, or offer them to the PLog.
            (None, None) if !self.calm && self.rng.chance(55) => self.begin(false),
            (None, _) => self.append(),
        }
    }

    pub(super) fn actualized(&mut self) {
        self.stats.actualizations += 1;
        self.epoch_last.clear();
        self.cp = Cp::Idle;
    }

    /// Sequences for a call naming some: up to four of `kind`, now and then an unknown one.
    pub(super) fn pick_seqs(&mut self, kind: u16, max: u64) -> Vec<u16> {
        let n = self.rng.below(max + 1);
        let mut seqs: Vec<u16> = (0..n).map(|_| self.rng.pick(kind_seqs(kind)).0).collect();
        if !seqs.is_empty() && self.rng.chance(4) {
            let at = self.rng.index(seqs.len());
            seqs[at] = UNKNOWN_SEQ;
        }
        seqs
    }

    /// A quad naming `seqs`, now and then with a count above four (refused).
    pub(super) fn pick_quad(&mut self, seqs: &[u16]) -> Quad {
        let mut q = Quad::of(seqs);
        if self.rng.chance(2) {
            q.count = self.rng.pick(&[5, 6, 255]);
        }
        q
    }

    /// Begins an event or a batch of events: a new transaction, more events of one whose
    /// events are staged, or (`flush`) the next after completing the appended transaction in
    /// the same call.
    pub(super) fn begin(&mut self, flush: bool) -> Checked {
        let kind = self.rng.pick(&[1, 2]);
        let ws = self.rng.below(self.shape.workspaces);
        let answer = if self.calm {
            NumbersAnswer::FromStorage
        } else {
            let f = &self.faults;
            let fail = f.numbers_read_fails_percent;
            let fail_many = fail + f.numbers_many_fails_percent;
            let short = fail_many + f.numbers_many_short_percent;
            match self.rng.below(100) {
                roll if roll < fail => NumbersAnswer::Fail("numbers read failed".into()),
                roll if roll < fail_many => {
                    NumbersAnswer::FailMany("numbers read (many) failed".into())
                }
                roll if roll < short => NumbersAnswer::ShortMany,
                _ => NumbersAnswer::FromStorage,
            }
        };
        let numbers_fail = matches!(answer, NumbersAnswer::Fail(_));
        let many_fails = numbers_fail || matches!(answer, NumbersAnswer::FailMany(_));
        let many_short = answer == NumbersAnswer::ShortMany;
        let down = self.io.storage.down();
        self.io.numbers = answer;
        let before = self.status()?;
        // Which call: the flushing ones number the next event (or batch) after the flush.
        let style = self
            .rng
            .weighted(if flush {
                &[0, 30, 30, 40]
            } else {
                &[40, 20, 15, 25]
            })
            .unwrap_or(0);
        let call = match style {
            0 => Call::Start { kind, ws },
            1 => {
                let seqs = self.pick_seqs(kind, 4);
                if flush {
                    Call::FlushStartNext { kind, ws, seqs }
                } else {
                    Call::StartNext { kind, ws, seqs }
                }
            }
            2 => {
                let seqs = self.pick_seqs(kind, 4);
                let seqs = self.pick_quad(&seqs);
                self.stats.quad_calls += 1;
                if flush {
                    Call::FlushStartNextQuad { kind, ws, seqs }
                } else {
                    Call::StartNextQuad { kind, ws, seqs }
                }
            }
            _ => {
                let events = self.rng.pick(&[0, 1, 2, 2, 3, 4, 6]);
                let list: Vec<u64> = (0..events)
                    .map(|_| self.rng.below(self.shape.workspaces))
                    .collect();
                let seqs = self.pick_seqs(kind, 4);
                let seqs = self.pick_quad(&seqs);
                if flush {
                    Call::FlushStartBatch {
                        kind,
                        ws: list,
                        seqs,
                    }
                } else {
                    Call::StartBatch {
                        kind,
                        ws: list,
                        seqs,
                    }
                }
            }
        };
        // What the sequencer holds, for the calls that may be refused having changed nothing.
        let held_before = match &call {
            Call::StartNextQuad { seqs, .. } | Call::FlushStartNextQuad { seqs, .. } => {
                seqs.named().is_none()
            }
            Call::StartBatch { .. } | Call::FlushStartBatch { .. } => true,
            _ => false,
        };
        let held_before = if held_before {
            self.held()?
        } else {
            sequencer::HeldNumbers::default()
        };
        let reply = self.call(call.clone(), false);
        self.io.numbers = NumbersAnswer::FromStorage;
        let reply = reply?;
        let fail = Fails {
            single: numbers_fail || down,
            many: many_fails || down,
            short: many_short && !down,
        };

        let quad = match &call {
            Call::StartNextQuad { seqs, .. }
            | Call::FlushStartNextQuad { seqs, .. }
            | Call::StartBatch { seqs, .. }
            | Call::FlushStartBatch { seqs, .. } => Some(*seqs),
            _ => None,
        };
        let invalid = quad.is_some_and(|q| q.named().is_none());
        let refused_with = |r: &Reply| match r {
            Reply::StartNext(Err(e)) | Reply::Quad(Err(e)) | Reply::Batch(Err(e)) => {
                Some(e.clone())
            }
            _ => None,
        };
        let refusal = refused_with(&reply);
        if invalid || refusal == Some(Refusal::InvalidParams) {
            if !invalid || refusal != Some(Refusal::InvalidParams) {
                return Err(violation(
                    Invariant::ExpectedReply,
                    format!(
                        "{call:?} returned {reply:?}: a quad count above 4, and only that, is invalid-params"
                    ),
                ));
            }
            // Refused before anything, the flush included.
            return self.unchanged(before, held_before);
        }
        // The start part of a flushing call runs after the flush, which nothing refuses here.
        let before = if flush {
            if matches!(refusal, Some(Refusal::NoTransaction | Refusal::CleanedUp)) {
                return Err(unexpected("a flushing call in a transaction", &reply));
            }
            self.stats.flushed += 1;
            self.stats.flush_starts += 1;
            self.cp = Cp::Idle;
            Status::Ready
        } else {
            before
        };

        match (call, reply) {
            (Call::Start { kind, ws }, Reply::Start(r)) => match r {
                Ok(outcome) => {
                    let nexts = self.rng.below(5) as u8;
                    if self.started(before, outcome, kind, ws)?
                        && let Some(tx) = self.tx_mut()
                    {
                        tx.nexts_left = nexts;
                    }
                    Ok(())
                }
                Err(Refusal::Storage(_)) if fail.single => {
                    self.stats.numbers_read_failures += 1;
                    Ok(())
                }
                Err(r) => Err(unexpected_refusal("start", &r)),
            },
            (
                Call::StartNext { kind, ws, seqs } | Call::FlushStartNext { kind, ws, seqs },
                Reply::StartNext(r),
            ) => self.started_next(before, kind, ws, &seqs, r, fail),
            (
                Call::StartNextQuad { kind, ws, seqs }
                | Call::FlushStartNextQuad { kind, ws, seqs },
                Reply::Quad(r),
            ) => {
                let named = seqs.named().unwrap_or_default();
                let r = match r {
                    Ok((outcome, places)) => {
                        let count = named.len();
                        let started = matches!(outcome, Started::Offset(_));
                        let asked = if started { count } else { 0 };
                        if places[asked..].iter().any(|&n| n != 0) {
                            return Err(violation(
                                Invariant::ExpectedReply,
                                format!(
                                    "{outcome:?} with numbers {places:?} for {named:?}: places not asked for hold 0"
                                ),
                            ));
                        }
                        Ok((outcome, places[..asked].to_vec()))
                    }
                    Err(e) => Err(e),
                };
                self.started_next(before, kind, ws, named, r, fail)
            }
            (
                Call::StartBatch { kind, ws, seqs } | Call::FlushStartBatch { kind, ws, seqs },
                Reply::Batch(r),
            ) => {
                let held = if flush { None } else { Some(held_before) };
                self.started_batch(
                    before,
                    held,
                    kind,
                    &ws,
                    seqs.named().unwrap_or_default(),
                    r,
                    fail,
                )
            }
            (call, reply) => Err(unexpected(&format!("{call:?}"), &reply)),
        }
    }

    /// Checks the reply of `start-next` (or its quad or flushing forms) of `seqs` in `ws`.
    pub(super) fn started_next(
        &mut self, before: Status, kind: u16, ws: u64, seqs: &[u16],
        r: Result<(Started, Vec<u64>), Refusal>, fail: Fails,
    ) -> Checked {
        match r {
            Ok((outcome, numbers)) => {
                let started = self.started(before, outcome, kind, ws)?;
                let expected = if started { seqs.len() } else { 0 };
                if numbers.len() != expected {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-next returned {} numbers for {seqs:?} ({outcome:?})",
                            numbers.len()
                        ),
                    ));
                }
                for (&seq, &n) in seqs.iter().zip(&numbers) {
                    self.check_number(kind, ws, seq, Ok(n))?;
                }
                Ok(())
            }
            Err(r @ (Refusal::UnknownSeqId { .. } | Refusal::SequenceExhausted { .. })) => {
                let model = self.model_numbers(kind, &[ws], seqs);
                if before == Status::Actualizing || model.as_ref().err() != Some(&r) {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-next({kind}, {ws}, {seqs:?}) while {before:?} was refused with {r:?}; the model expects {model:?}"
                        ),
                    ));
                }
                if matches!(r, Refusal::SequenceExhausted { .. }) {
                    self.stats.exhausted += 1;
                }
                self.after_dropping_refusal("start-next")
            }
            Err(Refusal::Storage(_)) if fail.single => {
                self.stats.numbers_read_failures += 1;
                Ok(())
            }
            Err(r) => Err(unexpected_refusal("start-next", &r)),
        }
    }

    /// Checks the reply of `start-batch` (or `flush-start-batch`, then `held` is `None`: the
    /// flush changed what the sequencer holds) of `seqs` for each of `ws`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn started_batch(
        &mut self, before: Status, held: Option<sequencer::HeldNumbers>, kind: u16, ws: &[u64],
        seqs: &[u16], r: Result<BatchReply, Refusal>, fail: Fails,
    ) -> Checked {
        let up_front = seqs
            .iter()
            .find(|&&s| !kind_seqs(kind).iter().any(|(k, _)| *k == s))
            .map(|&seq| Refusal::UnknownSeqId { kind, seq });
        let batch = match r {
            Ok(batch) => batch,
            Err(r) if up_front.is_some() => {
                if Some(&r) != up_front.as_ref() {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch({kind}, {ws:?}, {seqs:?}) was refused with {r:?}, not {up_front:?}"
                        ),
                    ));
                }
                // Refused before anything (after the flush, for the flushing form).
                return match held {
                    Some(held) => self.unchanged(before, held),
                    None => Ok(()),
                };
            }
            Err(r @ Refusal::SequenceExhausted { .. }) => {
                let model = self.model_numbers(kind, ws, seqs);
                if before == Status::Actualizing || model.as_ref().err() != Some(&r) {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch({kind}, {ws:?}, {seqs:?}) while {before:?} was refused with {r:?}; the model expects {model:?}"
                        ),
                    ));
                }
                self.stats.exhausted += 1;
                if self.tx().is_some_and(|tx| !tx.staged.is_empty()) {
                    self.stats.dropped_batches += 1;
                }
                return self.after_dropping_refusal("start-batch");
            }
            Err(r @ (Refusal::Storage(_) | Refusal::MalformedNumbers(_)))
                if (matches!(r, Refusal::Storage(_)) && (fail.many || fail.single))
                    || (matches!(r, Refusal::MalformedNumbers(_)) && fail.short) =>
            {
                self.stats.numbers_read_failures += 1;
                // A read before the first event changes nothing; one for a later event (a
                // workspace preloaded, then evicted) drops the transaction.
                let status = self.status()?;
                if status == Status::Actualizing && before != Status::Actualizing {
                    if !matches!(r, Refusal::Storage(_)) {
                        return Err(unexpected_refusal("start-batch (then dropped)", &r));
                    }
                    self.stats.dropped_batches += 1;
                    self.actualized();
                } else if let Some(held) = held
                    && matches!(r, Refusal::MalformedNumbers(_))
                {
                    self.unchanged(before, held)?;
                }
                return Ok(());
            }
            Err(r) => return Err(unexpected_refusal("start-batch", &r)),
        };
        if let Some(r) = up_front {
            return Err(violation(
                Invariant::ExpectedReply,
                format!(
                    "start-batch({kind}, {ws:?}, {seqs:?}) should be refused with {r:?}, got {batch:?}"
                ),
            ));
        }
        let started = batch.started as usize;
        let complete = batch.not_now.is_none();
        if started > ws.len()
            || complete != (started == ws.len())
            || batch.numbers.len() != started * seqs.len()
        {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("start-batch({kind}, {ws:?}, {seqs:?}) returned {batch:?}"),
            ));
        }
        if started > 0 {
            if before == Status::Actualizing {
                return Err(violation(
                    Invariant::StartRefusesDuringActualization,
                    format!("start-batch started {started} events while actualizing"),
                ));
            }
            let expected = self.expected_offset();
            if batch.first_offset != expected {
                return Err(violation(
                    Invariant::OffsetsDense,
                    format!(
                        "start-batch gave first offset {}, the PLog's next offset after the staged events is {expected}",
                        batch.first_offset
                    ),
                ));
            }
        }
        match batch.not_now {
            None => {}
            Some(NotNowReason::Actualizing) => {
                self.stats.not_now_actualizing += 1;
                if before != Status::Actualizing || started > 0 {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch said not-now(actualizing) after {started} events while {before:?}"
                        ),
                    ));
                }
            }
            Some(NotNowReason::TooManyUnflushed) => {
                self.stats.not_now_unflushed += 1;
                if before == Status::Actualizing {
                    return Err(violation(
                        Invariant::StartRefusesDuringActualization,
                        "start-batch said not-now(too-many-unflushed) instead of not-now(actualizing)",
                    ));
                }
                if started > 0 {
                    self.stats.partial_batches += 1;
                }
                let held = self.held()?;
                // No event is open: the transaction's numbers are the staged ones.
                if held.unflushed + held.transaction <= self.shape.max_unflushed {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start-batch said too-many-unflushed with {} unflushed and {} staged (max {})",
                            held.unflushed, held.transaction, self.shape.max_unflushed
                        ),
                    ));
                }
            }
        }
        if started == 0 {
            return Ok(());
        }
        self.stats.transactions += u64::from(self.tx().is_none());
        self.stats.batches += 1;
        self.stats.stages += started as u64;
        let per = seqs.len();
        for (i, &w) in ws.iter().enumerate().take(started) {
            let numbers = &batch.numbers[i * per..(i + 1) * per];
            let event = Event {
                ws: w,
                offset: batch.first_offset + i as u64,
                values: Vec::new(),
            };
            match &mut self.cp {
                Cp::Tx(tx) => tx.staged.push(event),
                Cp::Idle => {
                    self.cp = Cp::Tx(Tx {
                        staged: vec![event],
                        open: None,
                        nexts_left: 0,
                        appended: None,
                    })
                }
            }
            for (&seq, &n) in seqs.iter().zip(numbers) {
                self.check_number(kind, w, seq, Ok(n))?;
            }
        }
        Ok(())
    }

    /// Checks `start`'s outcome against the status before it; true if an event began.
    pub(super) fn started(
        &mut self, before: Status, outcome: Started, kind: u16, ws: u64,
    ) -> Checked<bool> {
        match outcome {
            Started::Offset(offset) => {
                if before == Status::Actualizing {
                    return Err(violation(
                        Invariant::StartRefusesDuringActualization,
                        format!("start began a transaction at offset {offset} while actualizing"),
                    ));
                }
                let expected = self.expected_offset();
                if offset != expected {
                    return Err(violation(
                        Invariant::OffsetsDense,
                        format!(
                            "start gave offset {offset}, the PLog's next offset after the staged events is {expected}"
                        ),
                    ));
                }
                let event = Event {
                    ws,
                    offset,
                    values: Vec::new(),
                };
                match &mut self.cp {
                    Cp::Tx(tx) => tx.open = Some((kind, event)),
                    Cp::Idle => {
                        self.stats.transactions += 1;
                        self.cp = Cp::Tx(Tx {
                            staged: Vec::new(),
                            open: Some((kind, event)),
                            nexts_left: 0,
                            appended: None,
                        });
                    }
                }
                Ok(true)
            }
            Started::NotNow(NotNowReason::Actualizing) => {
                self.stats.not_now_actualizing += 1;
                if before != Status::Actualizing {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!("start said not-now(actualizing) while {before:?}"),
                    ));
                }
                Ok(false)
            }
            Started::NotNow(NotNowReason::TooManyUnflushed) => {
                self.stats.not_now_unflushed += 1;
                if before == Status::Actualizing {
                    return Err(violation(
                        Invariant::StartRefusesDuringActualization,
                        "start said not-now(too-many-unflushed) instead of not-now(actualizing)",
                    ));
                }
                let held = self.held()?;
                // No event is open: the transaction's numbers are the staged ones.
                if held.unflushed + held.transaction <= self.shape.max_unflushed {
                    return Err(violation(
                        Invariant::ExpectedReply,
                        format!(
                            "start said too-many-unflushed with {} unflushed and {} staged (max {})",
                            held.unflushed, held.transaction, self.shape.max_unflushed
                        ),
                    ));
                }
                Ok(false)
            }
        }
    }

    /// A refused `start-next` or `start-batch` whose start began actualizes: the whole
    /// transaction is dropped.
    pub(super) fn after_dropping_refusal(&mut self, what: &str) -> Checked {
        let status = self.status()?;
        if status != Status::Actualizing {
            return Err(violation(
                Invariant::ExpectedReply,
                format!("a refused {what} left the sequencer {status:?}, not actualizing"),
            ));
        }
        self.actualized();
        Ok(())
    }

    pub(super) fn next_number(&mut self, kind: u16, ws: u64) -> Checked {
        let seq = self.rng.pick(kind_seqs(kind)).0;
        let reply = self.call(Call::Next { seq }, false)?;
        let Reply::Number(r) = reply else {
            return Err(unexpected("next", &reply));
        };
        self.check_number(kind, ws, seq, r)?;
        if let Some(tx) = self.tx_mut() {
            tx.nexts_left -= 1;
        }
        Ok(())
    }

    /// Ends the open event without completing the transaction.
    pub(super) fn stage(&mut self) -> Checked {
        let reply = self.call(Call::Stage, false)?;
        expect_done(&reply, "stage of the open event")?;
        self.stats.stages += 1;
        if let Some(tx) = self.tx_mut()
            && let Some((_, event)) = tx.open.take()
        {
            tx.staged.push(event);
            tx.nexts_left = 0;
        }
        Ok(())
    }

    /// Offers the transaction's events to the PLog in offset order (the staged ones, then the
    /// open one), or gives them up. An append that fails stops the rest: the PLog accepts only
    /// its next offset.
    pub(super) fn append(&mut self) -> Checked {
        let Some(tx) = self.tx() else {
            return Err(violation(
                Invariant::HostContract,
                "appending outside a transaction",
            ));
        };
        let events: Vec<Event> = tx.events().cloned().collect();
        if !self.calm && self.rng.chance(self.faults.command_fails_percent) {
            self.note(|| "the command fails: actualize".into());
            if let Some(tx) = self.tx_mut() {
                tx.appended = Some(false);
            }
            return Ok(());
        }
        let mut all_ok = true;
        for Event { offset, values, .. } in events {
            let roll = self.rng.below(100);
            let fails = self.faults.append_fails_percent;
            let lands_but_fails = fails + self.faults.append_lands_but_fails_percent;
            let (written, ok) = if self.calm {
                (true, true)
            } else if self.io.storage.down() || roll < fails {
                (false, false)
            } else if roll < lands_but_fails {
                self.stats.appends_failed_but_written += 1;
                (true, false)
            } else {
                (true, true)
            };
            if written {
                let next = self.io.storage.mem.plog_next();
                if offset != next {
                    return Err(violation(
                        Invariant::OffsetsDense,
                        format!("appending at offset {offset}, the PLog's next is {next}"),
                    ));
                }
                for v in &values {
                    let max = self.plog_max.entry(v.key).or_default();
                    *max = (*max).max(v.value);
                }
                self.io.storage.mem.plog.insert(offset, values);
            }
            self.note(|| format!("append at {offset}: written={written} ok={ok}"));
            if !ok {
                self.stats.appends_failed += 1;
                all_ok = false;
                break;
            }
        }
        if let Some(tx) = self.tx_mut() {
            tx.appended = Some(all_ok);
        }
        Ok(())
    }

    /// `actualize` or `actualize-beside-write`, at random; the world lets the offset read of
    /// the latter go beside a write in flight.
    fn actualize_call(&mut self) -> Call {
        self.reads_beside_writes = self.rng.chance(50);
        if self.reads_beside_writes {
            Call::ActualizeBesideWrite
        } else {
            Call::Actualize
        }
    }

    pub(super) fn caller_actualize(&mut self) -> Checked {
        let status = self.status()?;
        let call = if status == Status::Actualizing {
            Call::Actualize
        } else {
            self.actualize_call()
        };
        let reply = self.call(call, false)?;
        if status == Status::Actualizing {
            if reply != Reply::Done(Err(Refusal::AlreadyActualizing)) {
                return Err(unexpected("actualize while actualizing", &reply));
            }
            return Ok(());
        }
        expect_done(&reply, "actualize")?;
        self.actualized();
        Ok(())
    }
}
