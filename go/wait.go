package sequencer

import "context"

// StartWithin is Start that waits out "not now" (an actualization, or too many values waiting
// to be written) until ctx is done: the event's PLog offset, or ctx.Err() if it did not start
// by then. It waits for the sequencer's background steps (and looks again every 10 ms), never
// spins.
func (s *Sequencer) StartWithin(ctx context.Context, kind WSKind, ws WSID) (PLogOffset, error) {
	var offset PLogOffset
	err := s.tasks.waitFor(ctx, func() (bool, error) {
		o, ok, err := s.Start(kind, ws)
		offset = o
		return ok || err != nil, err
	})
	return offset, err
}

// StartEventWithin is StartEvent that waits out "not now" until ctx is done (see
// Sequencer.StartWithin): the event's PLog and WLog offsets, or ctx.Err().
func (e *Events) StartEventWithin(ctx context.Context, ws WSID) (PLogOffset, WLogOffset, error) {
	var plog PLogOffset
	var wlog WLogOffset
	err := e.s.tasks.waitFor(ctx, func() (bool, error) {
		p, w, ok, err := e.StartEvent(ws)
		plog, wlog = p, w
		return ok || err != nil, err
	})
	return plog, wlog, err
}
