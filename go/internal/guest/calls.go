package guest

import "github.com/tetratelabs/wazero/api"

// The `instance` interface's calls on the instance's sequencer. A refused call returns a
// *Refusal (read through `last-error`); a trap a *Trap.

func startOf(b []byte) Start {
	if b[0] == 0 {
		return Start{Started: true, Offset: le64(b[8:])}
	}
	return Start{Reason: NotNowReason(b[8])}
}

// result calls f and returns its result area (n bytes) or the refusal of its case 1, whose
// refusal byte is at refusalAt.
func (i *Instance) result(name string, f api.Function, n, refusalAt uint32) ([]byte, error) {
	if err := i.call(name, f); err != nil {
		return nil, err
	}
	b, err := i.view(name, uint32(i.stack[0]), n)
	if err != nil {
		return nil, err
	}
	if b[0] != 0 {
		return nil, i.refused(b[refusalAt])
	}
	return b, nil
}

// Start is `start(kind, ws)`.
func (i *Instance) Start(kind uint16, ws uint64) (Start, error) {
	i.stack[0], i.stack[1] = uint64(kind), ws
	b, err := i.result("start", i.f.start, 24, 8)
	if err != nil {
		return Start{}, err
	}
	return startOf(b[8:]), nil
}

// StartStatus is `start-status(kind, ws)`: the outcome and the status after it.
func (i *Instance) StartStatus(kind uint16, ws uint64) (Start, Status, error) {
	i.stack[0], i.stack[1] = uint64(kind), ws
	b, err := i.result("start-status", i.f.startStatus, 32, 8)
	if err != nil {
		return Start{}, 0, err
	}
	return startOf(b[8:]), Status(b[24]), nil
}

// Next is `next(seq)`.
func (i *Instance) Next(seq uint16) (uint64, error) {
	i.stack[0] = uint64(seq)
	b, err := i.result("next", i.f.next, 16, 8)
	if err != nil {
		return 0, err
	}
	return le64(b[8:]), nil
}

// Flush is `flush()`.
func (i *Instance) Flush() error {
	_, err := i.result("flush", i.f.flush, 2, 1)
	return err
}

// FlushStatus is `flush-status()`: the status after it.
func (i *Instance) FlushStatus() (Status, error) {
	b, err := i.result("flush-status", i.f.flushStatus, 2, 1)
	if err != nil {
		return 0, err
	}
	return Status(b[1]), nil
}

// Actualize is `actualize()`.
func (i *Instance) Actualize() error {
	_, err := i.result("actualize", i.f.actualize, 2, 1)
	return err
}

// ActualizeBesideWrite is `actualize-beside-write()`.
func (i *Instance) ActualizeBesideWrite() error {
	_, err := i.result("actualize-beside-write", i.f.actualizeBeside, 2, 1)
	return err
}

// Stage is `stage()`.
func (i *Instance) Stage() error {
	_, err := i.result("stage", i.f.stage, 2, 1)
	return err
}

// Cleanup is `cleanup()`.
func (i *Instance) Cleanup() error { return i.call("cleanup", i.f.cleanup) }

// Pump is `pump()`.
func (i *Instance) Pump() error { return i.call("pump", i.f.pump) }

// Status is `status()`.
func (i *Instance) Status() (Status, error) {
	if err := i.call("status", i.f.status); err != nil {
		return 0, err
	}
	return Status(uint32(i.stack[0])), nil
}

// HeldNumbers is `held-numbers()`.
func (i *Instance) HeldNumbers() (HeldNumbers, error) {
	if err := i.call("held-numbers", i.f.heldNumbers); err != nil {
		return HeldNumbers{}, err
	}
	b, err := i.view("held-numbers", uint32(i.stack[0]), 12)
	if err != nil {
		return HeldNumbers{}, err
	}
	return HeldNumbers{Cached: le32(b), Unflushed: le32(b[4:]), Transaction: le32(b[8:])}, nil
}

// Deliver reports op's outcome (`deliver`; a PLog page through `deliver-plog-words`).
func (i *Instance) Deliver(op uint64, o *Outcome) error {
	s := &i.stack
	switch o.Kind {
	case OutcomeWritten:
		s[0], s[1], s[2], s[3], s[4], s[5] = op, 0, 0, 0, 0, 0
	case OutcomeNextOffset:
		s[0], s[1], s[2], s[3], s[4], s[5] = op, 1, o.NextOffset, 0, 0, 0
	case OutcomeFailed:
		ptr, err := i.alloc(1, uint32(len(o.Message)))
		if err != nil {
			return err
		}
		if !i.mem.WriteString(ptr, o.Message) {
			return i.trap("deliver", errOutOfBounds)
		}
		s[0], s[1], s[2], s[3], s[4], s[5] = op, 3, uint64(ptr), uint64(len(o.Message)), 0, 0
	case OutcomePlogPage:
		ptr, err := i.writeU64s("deliver-plog-words", o.Words)
		if err != nil {
			return err
		}
		end := uint64(0)
		if o.End {
			end = 1
		}
		s[0], s[1], s[2], s[3], s[4] = op, uint64(ptr), uint64(len(o.Words)), o.Next, end
		_, err = i.result("deliver-plog-words", i.f.deliverWords, 2, 1)
		return err
	}
	_, err := i.result("deliver", i.f.deliver, 2, 1)
	return err
}

// writeU64s hands list to the module (cabi_realloc, then the words little-endian).
func (i *Instance) writeU64s(name string, list []uint64) (uint32, error) {
	ptr, err := i.alloc(8, uint32(len(list))*8)
	if err != nil || len(list) == 0 {
		return ptr, err
	}
	b, err := i.view(name, ptr, uint32(len(list))*8)
	if err != nil {
		return 0, err
	}
	for k, w := range list {
		putLe64(b[8*k:], w)
	}
	return ptr, nil
}

func putLe64(b []byte, v uint64) {
	_ = b[7]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	b[4], b[5], b[6], b[7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
}

func (i *Instance) quadAt(at int, q Quad) {
	s := &i.stack
	s[at], s[at+1], s[at+2], s[at+3], s[at+4] = uint64(q.Count), uint64(q.Seqs[0]), uint64(q.Seqs[1]),
		uint64(q.Seqs[2]), uint64(q.Seqs[3])
}

func quadNumbers(b []byte) (n [4]uint64) {
	n[0], n[1], n[2], n[3] = le64(b), le64(b[8:]), le64(b[16:]), le64(b[24:])
	return n
}

// StartNextQuad is `start-next-quad(kind, ws, seqs)`.
func (i *Instance) StartNextQuad(kind uint16, ws uint64, seqs Quad) (Start, [4]uint64, error) {
	i.stack[0], i.stack[1] = uint64(kind), ws
	i.quadAt(2, seqs)
	b, err := i.result("start-next-quad", i.f.startNextQuad, 56, 8)
	if err != nil {
		return Start{}, [4]uint64{}, err
	}
	return startOf(b[8:]), quadNumbers(b[24:]), nil
}

// FlushStartNextQuad is `flush-start-next-quad(kind, ws, seqs)`.
func (i *Instance) FlushStartNextQuad(kind uint16, ws uint64, seqs Quad) (Start, [4]uint64, error) {
	i.stack[0], i.stack[1] = uint64(kind), ws
	i.quadAt(2, seqs)
	b, err := i.result("flush-start-next-quad", i.f.flushStartNextQuad, 56, 8)
	if err != nil {
		return Start{}, [4]uint64{}, err
	}
	return startOf(b[8:]), quadNumbers(b[24:]), nil
}

func aheadOf(b []byte) Ahead {
	return Ahead{Start: startOf(b), Status: Status(b[16]), Numbers: quadNumbers(b[24:])}
}

// StartAhead is `start-ahead(kind, ws, seqs)`.
func (i *Instance) StartAhead(kind uint16, ws uint64, seqs Quad) (Ahead, error) {
	i.stack[0], i.stack[1] = uint64(kind), ws
	i.quadAt(2, seqs)
	b, err := i.result("start-ahead", i.f.startAhead, 64, 8)
	if err != nil {
		return Ahead{}, err
	}
	return aheadOf(b[8:]), nil
}

// TakeFlushStartAhead is `take-flush-start-ahead(taken, kind, ws, seqs)`.
func (i *Instance) TakeFlushStartAhead(taken Quad, kind uint16, ws uint64, seqs Quad) (Ahead, error) {
	i.quadAt(0, taken)
	i.stack[5], i.stack[6] = uint64(kind), ws
	i.quadAt(7, seqs)
	b, err := i.result("take-flush-start-ahead", i.f.takeFlushStartAhead, 64, 8)
	if err != nil {
		return Ahead{}, err
	}
	return aheadOf(b[8:]), nil
}

// Take is `take(taken)`.
func (i *Instance) Take(taken Quad) error {
	i.quadAt(0, taken)
	_, err := i.result("take", i.f.take, 2, 1)
	return err
}

// TakeNext is `take-next(taken, seq)`.
func (i *Instance) TakeNext(taken Quad, seq uint16) (uint64, error) {
	i.quadAt(0, taken)
	i.stack[5] = uint64(seq)
	b, err := i.result("take-next", i.f.takeNext, 16, 8)
	if err != nil {
		return 0, err
	}
	return le64(b[8:]), nil
}

// TakeFlush is `take-flush(taken)`: the status after it.
func (i *Instance) TakeFlush(taken Quad) (Status, error) {
	i.quadAt(0, taken)
	b, err := i.result("take-flush", i.f.takeFlush, 2, 1)
	if err != nil {
		return 0, err
	}
	return Status(b[1]), nil
}
