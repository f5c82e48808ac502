package guest

import (
	"errors"

	"github.com/tetratelabs/wazero/api"
)

// The `events` interface (the facade) on the instance's sequencer, by its rep.

var errNoRep = errors.New("create returned a sequencer without calling [resource-new]")

// methodCall calls an `events` function whose parameters are on the stack from slot 1 on
// (the rep goes in slot 0) and returns its result area (n bytes) if ok; a refusal is its
// *Refusal. The post-return call is made before returning.
func (i *Instance) methodCall(name string, f, post api.Function, n uint32, read func(b []byte)) error {
	i.stack[0] = uint64(i.rep)
	if err := i.call(name, f); err != nil {
		return err
	}
	ptr := uint32(i.stack[0])
	ok, refusal, err := i.methodResult(name, ptr)
	if err != nil {
		return err
	}
	if ok && read != nil {
		b, err := i.view(name, ptr, n)
		if err != nil {
			return err
		}
		read(b)
	}
	if err := i.post(name, post, ptr); err != nil {
		return err
	}
	if !ok {
		return refusal
	}
	return nil
}

func eventStartOf(b []byte) (Start, uint64) {
	if b[0] == 0 {
		return Start{Started: true, Offset: le64(b[8:])}, le64(b[16:])
	}
	return Start{Reason: NotNowReason(b[8])}, 0
}

// StartEvent is `events.start-event(ws)`: the outcome and, if it started, the WLog offset.
func (i *Instance) StartEvent(ws uint64) (st Start, wlog uint64, err error) {
	i.stack[1] = ws
	err = i.methodCall("start-event", i.f.startEvent, i.f.startEventPost, 32, func(b []byte) {
		st, wlog = eventStartOf(b[8:])
	})
	return st, wlog, err
}

// StartEventAhead is `events.start-event-ahead(ws, seqs)` (Ahead.WLog holds the WLog offset;
// its Status is not set).
func (i *Instance) StartEventAhead(ws uint64, seqs Quad) (a Ahead, err error) {
	i.stack[1] = ws
	i.quadAt(2, seqs)
	err = i.methodCall("start-event-ahead", i.f.startEventAhead, i.f.startEventAheadPost, 64, func(b []byte) {
		a.Start, a.WLog = eventStartOf(b[8:])
		a.Numbers = quadNumbers(b[32:])
	})
	return a, err
}

// TakeFlushStartEventAhead is `events.take-flush-start-event-ahead(taken, ws, seqs)`.
func (i *Instance) TakeFlushStartEventAhead(taken Quad, ws uint64, seqs Quad) (a Ahead, err error) {
	i.quadAt(1, taken)
	i.stack[6] = ws
	i.quadAt(7, seqs)
	err = i.methodCall("take-flush-start-event-ahead", i.f.takeFlushStartEventAhead,
		i.f.takeFlushStartEventAheadPost, 64, func(b []byte) {
			a.Start, a.WLog = eventStartOf(b[8:])
			a.Numbers = quadNumbers(b[32:])
		})
	return a, err
}

// NextRecID is `events.next-rec-id()`.
func (i *Instance) NextRecID() (n uint64, err error) {
	err = i.methodCall("next-rec-id", i.f.nextRecID, i.f.nextRecIDPost, 16, func(b []byte) { n = le64(b[8:]) })
	return n, err
}

// NextCRecID is `events.next-c-rec-id()`.
func (i *Instance) NextCRecID() (n uint64, err error) {
	err = i.methodCall("next-c-rec-id", i.f.nextCRecID, i.f.nextCRecIDPost, 16, func(b []byte) { n = le64(b[8:]) })
	return n, err
}

// FinishEvent is `events.finish-event()`.
func (i *Instance) FinishEvent() error {
	return i.methodCall("finish-event", i.f.finishEvent, i.f.finishEventPost, 0, nil)
}

// CancelEvent is `events.cancel-event()`.
func (i *Instance) CancelEvent() error {
	return i.methodCall("cancel-event", i.f.cancelEvent, i.f.cancelEventPost, 0, nil)
}

// SequenceStatus is the facade's status (0 none .. 4 finished).
type SequenceStatus uint8

var sequenceStatusNames = [...]string{"none", "recover", "ready", "eventing", "finished"}

// String is the status's WIT name.
func (s SequenceStatus) String() string {
	if int(s) < len(sequenceStatusNames) {
		return sequenceStatusNames[s]
	}
	return "sequence-status(?)"
}

// EventStatus is `events.status()`.
func (i *Instance) EventStatus() (SequenceStatus, error) {
	i.stack[0] = uint64(i.rep)
	if err := i.call("events.status", i.f.eventStatus); err != nil {
		return 0, err
	}
	return SequenceStatus(uint32(i.stack[0])), nil
}

// Drop is `[dtor]sequencer`: the sequencer goes (the instance's `instance` calls are refused
// with cleaned-up afterwards).
func (i *Instance) Drop() error {
	if !i.hasRep {
		return nil
	}
	i.hasRep = false
	i.stack[0] = uint64(i.rep)
	return i.call("[dtor]sequencer", i.f.dtor)
}
