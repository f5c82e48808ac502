package sequencer

import (
	"fmt"
	"time"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// opKind is a kind of storage work the plugin begins.
type opKind uint8

const (
	opReadNextOffset opKind = iota
	opWrite
	opReadPlog
)

// op is storage work the plugin began, for the instance of generation gen.
type op struct {
	kind  opKind
	gen   uint64
	id    uint64
	batch []SeqValue // opWrite
	arg   uint64     // opWrite: the offset to store; opReadPlog: the first offset
}

// host is one instance's imports (guest.Host): it reads numbers from the storage at once and
// queues the rest for the tasks goroutine. It runs inside calls into the instance, under the
// sequencer's lock.
type host struct {
	storage Storage
	many    NumbersManyReader
	epoch   time.Time
	gen     uint64

	// ops begun during the call, handed to the tasks after it.
	ops []op
	// wake: the last wake-up asked for (wakeSet false: none); wakeChanged since handed over.
	wakeAt      uint64
	wakeSet     bool
	wakeChanged bool
	// status the plugin reported (statusChanged: since handed over).
	status        guest.Status
	statusChanged bool

	seqs []SeqID
	ws   []WSID

	// trapNextWrite makes the next begin-write trap (a test's way to make the plugin trap
	// inside a call of the tasks goroutine).
	trapNextWrite bool
}

func (h *host) ReadNumbers(ws uint64, seqs []uint16, out []uint64) error {
	h.seqs = h.seqs[:0]
	for _, s := range seqs {
		h.seqs = append(h.seqs, SeqID(s))
	}
	numbers, err := h.storage.ReadNumbers(WSID(ws), h.seqs)
	if err != nil {
		return err
	}
	if len(numbers) != len(seqs) {
		return fmt.Errorf("ReadNumbers returned %d numbers for %d sequences", len(numbers), len(seqs))
	}
	for k, n := range numbers {
		out[k] = uint64(n)
	}
	return nil
}

func (h *host) ReadNumbersMany(ws []uint64, seqs []uint16, out []uint64) error {
	if h.many == nil {
		for k, w := range ws {
			if err := h.ReadNumbers(w, seqs, out[k*len(seqs):(k+1)*len(seqs)]); err != nil {
				return err
			}
		}
		return nil
	}
	h.seqs, h.ws = h.seqs[:0], h.ws[:0]
	for _, s := range seqs {
		h.seqs = append(h.seqs, SeqID(s))
	}
	for _, w := range ws {
		h.ws = append(h.ws, WSID(w))
	}
	numbers, err := h.many.ReadNumbersMany(h.ws, h.seqs)
	if err != nil {
		return err
	}
	if len(numbers) != len(out) {
		return fmt.Errorf("ReadNumbersMany returned %d numbers for %d", len(numbers), len(out))
	}
	for k, n := range numbers {
		out[k] = uint64(n)
	}
	return nil
}

func (h *host) BeginReadNextOffset(id uint64) {
	h.ops = append(h.ops, op{kind: opReadNextOffset, gen: h.gen, id: id})
}

func (h *host) BeginWrite(id uint64, words []uint64, next uint64) {
	if h.trapNextWrite {
		h.trapNextWrite = false
		panic("a trap injected by a test")
	}
	batch := make([]SeqValue, len(words)/3)
	for k := range batch {
		w := words[3*k:]
		batch[k] = SeqValue{Key: NumberKey{WSID: WSID(w[0]), SeqID: SeqID(w[1])}, Value: Number(w[2])}
	}
	h.ops = append(h.ops, op{kind: opWrite, gen: h.gen, id: id, batch: batch, arg: next})
}

func (h *host) BeginReadPlog(id uint64, first uint64) {
	h.ops = append(h.ops, op{kind: opReadPlog, gen: h.gen, id: id, arg: first})
}

func (h *host) Now() uint64 { return uint64(time.Since(h.epoch)) }

func (h *host) SetWake(at uint64, set bool) {
	h.wakeAt, h.wakeSet, h.wakeChanged = at, set, true
}

func (h *host) StatusChanged(s guest.Status) {
	h.status, h.statusChanged = s, true
}

// deadline is the wall-clock time of a wake-up at `at` on the instance's clock.
func (h *host) deadline(at uint64) time.Time { return h.epoch.Add(time.Duration(at)) }
