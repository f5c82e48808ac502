// Package conformance runs the conformance scenarios (guest-tests/conformance/scenarios, the
// runner rules in its README) on the core module through internal/guest: the scenario host
// (an in-memory storage with fault counters, a queue of begun operations, a manual clock,
// held writes) and the step interpreter. The package's tests run every scenario.
package conformance

import (
	"errors"
	"fmt"
	"sort"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// StepFailed is a failing step, its message naming the runner, the scenario and the step.
type StepFailed struct{ Msg string }

// Error is the failure's message.
func (e *StepFailed) Error() string { return e.Msg }

func failf(format string, args ...any) error { return &StepFailed{Msg: fmt.Sprintf(format, args...)} }

type key struct {
	ws  uint64
	seq uint16
}

type value struct {
	ws    uint64
	seq   uint16
	value uint64
}

// op is a storage operation the guest began.
type op struct {
	kind   string // write, read-next-offset, read-plog
	op     uint64
	values []value
	next   uint64
	first  uint64
}

// host is the scenario host of the README ("The host every runner models").
type host struct {
	plog       map[uint64][]value
	view       map[key]uint64
	nextOffset uint64
	writes     int
	pageEvents int
	faults     map[string]int
	hold       bool
	queue      []op
	now        uint64
	wake       *uint64
}

func newHost() *host {
	return &host{
		plog: map[uint64][]value{}, view: map[key]uint64{}, pageEvents: 100,
		faults: map[string]int{"fail_writes": 0, "fail_reads": 0, "fail_number_reads": 0},
	}
}

func (h *host) fault(name string) bool {
	if h.faults[name] > 0 {
		h.faults[name]--
		return true
	}
	return false
}

func (h *host) ReadNumbers(ws uint64, seqs []uint16, out []uint64) error {
	if h.fault("fail_number_reads") {
		return errors.New("injected read-numbers failure")
	}
	for k, s := range seqs {
		out[k] = h.view[key{ws, s}]
	}
	return nil
}

func (h *host) ReadNumbersMany(ws []uint64, seqs []uint16, out []uint64) error {
	for k, w := range ws {
		if err := h.ReadNumbers(w, seqs, out[k*len(seqs):(k+1)*len(seqs)]); err != nil {
			return err
		}
	}
	return nil
}

func (h *host) BeginReadNextOffset(o uint64) {
	h.queue = append(h.queue, op{kind: "read-next-offset", op: o})
}

func (h *host) BeginWrite(o uint64, words []uint64, next uint64) {
	vs := make([]value, 0, len(words)/3)
	for k := 0; k+2 < len(words); k += 3 {
		vs = append(vs, value{words[k], uint16(words[k+1]), words[k+2]})
	}
	h.queue = append(h.queue, op{kind: "write", op: o, values: vs, next: next})
}

func (h *host) BeginReadPlog(o uint64, first uint64) {
	h.queue = append(h.queue, op{kind: "read-plog", op: o, first: first})
}

func (h *host) Now() uint64 { return h.now }

func (h *host) SetWake(at uint64, set bool) {
	if set {
		h.wake = &at
	} else {
		h.wake = nil
	}
}

func (h *host) StatusChanged(guest.Status) {}

// runnable is the index of the first queued operation that may run now, or -1: a write never
// while writes are held, a read-next-offset never before a queued write.
func (h *host) runnable() int {
	for i, q := range h.queue {
		switch q.kind {
		case "write":
			if !h.hold {
				return i
			}
		case "read-next-offset":
			before := false
			for _, p := range h.queue[:i] {
				before = before || p.kind == "write"
			}
			if !before {
				return i
			}
		default:
			return i
		}
	}
	return -1
}

func (h *host) plogOffsets() []uint64 {
	all := make([]uint64, 0, len(h.plog))
	for o := range h.plog {
		all = append(all, o)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	return all
}

func (h *host) plogNext() uint64 {
	all := h.plogOffsets()
	if len(all) == 0 {
		return 1
	}
	return all[len(all)-1] + 1
}

// perform does q against the storage and returns its outcome.
func (h *host) perform(q op) *guest.Outcome {
	if q.kind == "write" {
		if h.fault("fail_writes") {
			return &guest.Outcome{Kind: guest.OutcomeFailed, Message: "injected write failure"}
		}
		for _, v := range q.values {
			h.view[key{v.ws, v.seq}] = v.value
		}
		h.nextOffset = q.next
		h.writes++
		return &guest.Outcome{Kind: guest.OutcomeWritten}
	}
	if h.fault("fail_reads") {
		return &guest.Outcome{Kind: guest.OutcomeFailed, Message: "injected " + q.kind + " failure"}
	}
	if q.kind == "read-next-offset" {
		return &guest.Outcome{Kind: guest.OutcomeNextOffset, NextOffset: h.nextOffset}
	}
	all := h.plogOffsets()
	var words []uint64
	next, n := q.first, 0
	for _, o := range all {
		if o < q.first {
			continue
		}
		if n == h.pageEvents {
			break
		}
		for _, v := range h.plog[o] {
			words = append(words, o, v.ws, uint64(v.seq), v.value)
		}
		next, n = o+1, n+1
	}
	end := len(all) == 0 || all[len(all)-1] < next
	return &guest.Outcome{Kind: guest.OutcomePlogPage, Words: words, Next: next, End: end}
}
