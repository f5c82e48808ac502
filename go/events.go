package sequencer

import "github.com/plog-sequencer/plog-sequencer/go/internal/guest"

// WLogOffset is an event's offset in its workspace's log.
type WLogOffset uint64

// RecordID is a document or record id.
type RecordID uint64

// The facade's system sequences (docs/DESIGN.md §5.2), in workspace kind SystemWSKind.
const (
	SystemWSKind WSKind = 0
	SeqWLog      SeqID  = 1
	SeqRecID     SeqID  = 2
	SeqCRecID    SeqID  = 3
)

// SequenceStatus is the facade's status (docs/DESIGN.md §5.3).
type SequenceStatus uint8

// The facade's statuses.
const (
	SequenceNone SequenceStatus = iota
	SequenceRecover
	SequenceReady
	SequenceEventing
	SequenceFinished
)

// String is the status's WIT name (none, recover, ready, eventing, finished).
func (s SequenceStatus) String() string { return guest.SequenceStatus(s).String() }

// Events is the facade for command processors (docs/DESIGN.md §5: the `events` interface) over
// a sequencer made with SystemParams: an event's PLog and WLog offsets, its record ids,
// finishing or cancelling it.
type Events struct {
	s *Sequencer
}

// NewEvents makes the facade's sequencer: New(SystemParams(base), storage, opts...).
func NewEvents(base Params, storage Storage, opts ...Option) (*Events, error) {
	p, err := SystemParams(base)
	if err != nil {
		return nil, err
	}
	s, err := New(p, storage, opts...)
	if err != nil {
		return nil, err
	}
	return &Events{s: s}, nil
}

// Sequencer is the sequencer under the facade (for WaitReady, WaitFlushed, Close, ...).
func (e *Events) Sequencer() *Sequencer { return e.s }

// StartEvent begins an event in workspace ws: its PLog offset and WLog offset, true; or "not
// now" (false) while the sequencer recovers or too many values wait to be written. An event
// already in progress is ErrTransactionInProgress. Like Start, it learns the next record ids
// ahead (start-event-ahead), so NextRecID and NextCRecID make no call.
func (e *Events) StartEvent(ws WSID) (PLogOffset, WLogOffset, bool, error) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.ready()
	if err != nil {
		return 0, 0, false, err
	}
	s.starts++
	var a guest.Ahead
	switch r, taken := s.books.end(); r {
	case reportFlush:
		a, err = i.TakeFlushStartEventAhead(taken, uint64(ws), s.books.question())
	case reportTake:
		if err = i.Take(taken); err == nil {
			a, err = i.StartEventAhead(uint64(ws), s.books.question())
		}
	default:
		a, err = i.StartEventAhead(uint64(ws), s.books.question())
	}
	if err != nil {
		return 0, 0, false, s.done(err)
	}
	s.books.started(a.Numbers, a.Start.Started)
	_ = s.done(nil)
	// event-ahead carries no status, and the plugin reports none it believes reported (a
	// deferred flush changed it without a call): the outcome says what it is.
	switch {
	case a.Start.Started:
		s.setStatus(StatusInTransaction)
	case a.Start.Reason == guest.NotNowActualizing:
		s.setStatus(StatusActualizing)
	default:
		s.setStatus(StatusReady)
	}
	if !a.Start.Started {
		return 0, 0, false, nil
	}
	return PLogOffset(a.Start.Offset), WLogOffset(a.WLog), true, nil
}

// NextRecID is the next O/W document or record id of the event's workspace (Next of SeqRecID).
func (e *Events) NextRecID() (RecordID, error) {
	n, err := e.s.Next(SeqRecID)
	return RecordID(n), err
}

// NextCRecID is the next C document or record id of the event's workspace (Next of SeqCRecID).
func (e *Events) NextCRecID() (RecordID, error) {
	n, err := e.s.Next(SeqCRecID)
	return RecordID(n), err
}

// FinishEvent says the event is in the PLog (Flush).
func (e *Events) FinishEvent() error { return e.s.Flush() }

// CancelEvent says the event failed: the sequencer recovers, then hands out the same offsets
// and ids again. Without an event in progress it returns ErrNoTransaction.
func (e *Events) CancelEvent() error {
	return e.s.call(func(i *guest.Instance) error { return i.CancelEvent() })
}

// Status is the facade's status, from the sequencer's (no call into the plugin).
func (e *Events) Status() SequenceStatus {
	switch e.s.Status() {
	case StatusActualizing:
		return SequenceRecover
	case StatusReady:
		return SequenceReady
	case StatusInTransaction:
		return SequenceEventing
	}
	return SequenceFinished
}

// Close closes the sequencer under the facade (Sequencer.Close).
func (e *Events) Close() error { return e.s.Close() }
