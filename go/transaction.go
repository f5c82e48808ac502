package sequencer

import "github.com/plog-sequencer/plog-sequencer/go/internal/guest"

// Start begins a sequencing transaction for workspace ws of kind kind: the PLog offset its
// event takes, true. It returns 0, false, nil ("not now") while the sequencer actualizes or
// while more values wait to be written than MaxNumUnflushedValues allows: try again later
// (WaitReady waits out an actualization). Where the original panics (a transaction already in
// progress) it returns ErrTransactionInProgress; an unknown kind is ErrUnknownWSKind, a failed
// ReadNumbers ErrStorage; nothing changes then.
//
// The per-step path makes one call into the plugin per transaction: Start also learns the
// numbers the last transaction's sequences would get from their first Next (start-ahead), Next
// hands those out without a call, and Flush's report rides on the next Start
// (take-flush-start-ahead). The plugin decides every number.
func (s *Sequencer) Start(kind WSKind, ws WSID) (PLogOffset, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.ready()
	if err != nil {
		return 0, false, err
	}
	s.starts++
	var a guest.Ahead
	switch r, taken := s.books.end(); r {
	case reportFlush:
		a, err = i.TakeFlushStartAhead(taken, uint16(kind), uint64(ws), s.books.question())
	case reportTake:
		if err = i.Take(taken); err == nil {
			a, err = i.StartAhead(uint16(kind), uint64(ws), s.books.question())
		}
	default:
		a, err = i.StartAhead(uint16(kind), uint64(ws), s.books.question())
	}
	if err != nil {
		return 0, false, s.done(err)
	}
	s.books.started(a.Numbers, a.Start.Started)
	s.setStatus(Status(a.Status))
	_ = s.done(nil)
	if !a.Start.Started {
		return 0, false, nil
	}
	return PLogOffset(a.Start.Offset), true, nil
}

// Next returns the next number of sequence seq in the transaction. Without a transaction it
// returns ErrNoTransaction (the original panics); for a sequence the kind does not define,
// ErrUnknownSeqID; at the largest number there is, ErrSequenceExhausted.
func (s *Sequencer) Next(seq SeqID) (Number, error) {
	if s.books.gen == s.current.Load() && !s.isClosed.Load() {
		if n, ok := s.books.next(uint16(seq)); ok {
			return Number(n), nil // handed out ahead: no call, no lock
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.ready()
	if err != nil {
		return 0, err
	}
	// After a deferred flush there is no transaction: the plugin says so.
	if err := s.settle(i); err != nil {
		return 0, s.done(err)
	}
	n, err := i.TakeNext(s.books.reportWithNext(uint16(seq)), uint16(seq))
	if err != nil {
		return 0, s.done(err)
	}
	_ = s.done(nil)
	return Number(n), nil
}

// Flush completes the transaction: its event is in the PLog (call it only once the append is
// durable). Its numbers go to the flusher, which writes them in the background. Without a
// transaction it returns ErrNoTransaction (the original panics).
//
// The flush of a transaction Start opened, with no other call since, makes no call into the
// plugin (it cannot be refused): the next call reports it, or the sequencer itself after a
// moment without one (WithSettleAfter).
func (s *Sequencer) Flush() error {
	if s.books.gen == s.current.Load() && !s.isClosed.Load() && s.books.deferFlush() {
		s.tasks.armSettle() // no call, no lock: the next call reports it (Status says ready)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.ready()
	if err != nil {
		return err
	}
	if err := s.report(i); err != nil {
		return s.done(err)
	}
	st, err := i.FlushStatus()
	if err == nil {
		s.setStatus(Status(st))
	}
	return s.done(err)
}

// Actualize drops the transaction, if any, and everything not yet written, and recovers from
// the storage and the PLog (the same offset and numbers are handed out again afterwards;
// Start says "not now" meanwhile). While already actualizing it returns ErrAlreadyActualizing
// (the original panics).
func (s *Sequencer) Actualize() error {
	return s.call(func(i *guest.Instance) error { return i.Actualize() })
}

// Stage ends the open event but not the transaction: the next Start numbers another event of
// it at the next offset; Flush completes them all, Actualize drops them all.
func (s *Sequencer) Stage() error {
	return s.call(func(i *guest.Instance) error { return i.Stage() })
}
