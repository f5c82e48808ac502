package sequencer

import (
	"sync/atomic"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// ahead keeps the books of numbers handed out ahead (src/ahead.rs, the same rules as the Rust
// host's): a start asks the plugin (start-ahead) what the first `next` of up to four
// sequences would hand out; Next hands those out without a call; the next call reports what
// was handed out (take, take-next, take-flush, take-flush-start-ahead), and the plugin takes
// them as `next` would have. The plugin decides every number; these books only remember which
// of its numbers were handed out.
//
// Only the command processor's goroutine (the transaction calls) touches the books, except a
// deferred flush: flushTaken is written before flushPending is set (an atomic store), and
// whoever sees flushPending set under the sequencer's lock may report it (settle), since no
// flush can be deferred again before a Start, which takes the lock.
type ahead struct {
	// gen is the generation of the instance the books are about (a trap makes them stale).
	gen uint64
	// seqs: the sequences asked about at the last start (n of them).
	seqs [4]uint16
	n    uint8
	// numbers[i]: what next(seqs[i]) gets; 0 for none.
	numbers [4]uint64
	// taken bit i: numbers[i] handed out, not reported yet. spent bit i: no longer good.
	taken, spent uint8
	// asked: the sequences of this transaction's first four nexts, in order.
	asked  [4]uint16
	nasked uint8
	// open: the last start opened a transaction and no call since could have ended it.
	open bool
	// flushPending: a deferred flush waits to be reported, with flushTaken, what was handed
	// out before it.
	flushPending atomic.Bool
	flushTaken   guest.Quad
}

// report is what to tell the plugin before a call other than next.
type report uint8

const (
	reportNothing report = iota
	reportTake
	reportFlush
)

// question is the sequences to ask about at the next start: the last transaction's first four
// nexts, else those asked about last time.
func (a *ahead) question() guest.Quad {
	if a.nasked > 0 {
		return guest.Quad{Count: a.nasked, Seqs: a.asked}
	}
	return guest.Quad{Count: a.n, Seqs: a.seqs}
}

// started takes in a start's answer: numbers[i] for the i-th sequence of question(), open if
// it opened a transaction. Anything ahead before is forgotten (end it first).
func (a *ahead) started(numbers [4]uint64, open bool) {
	a.open = open
	if a.nasked > 0 {
		a.seqs, a.n = a.asked, a.nasked
	}
	a.numbers = numbers
	for i := a.n; i < 4; i++ {
		a.numbers[i] = 0
	}
	a.taken, a.spent, a.nasked = 0, 0, 0
}

// next hands out seq's first good number ahead without a call; ok false: ask the plugin (with
// reportWithNext).
func (a *ahead) next(seq uint16) (uint64, bool) {
	if a.nasked < 4 {
		a.asked[a.nasked] = seq
		a.nasked++
	}
	for i := uint8(0); i < a.n; i++ {
		bit := uint8(1) << i
		if a.seqs[i] == seq && a.spent&bit == 0 {
			if a.numbers[i] == 0 {
				return 0, false
			}
			a.spent |= bit
			a.taken |= bit
			return a.numbers[i], true
		}
	}
	return 0, false
}

// reportWithNext is what to report with a take-next(seq): the numbers handed out so far; seq's
// numbers ahead are spent (that next takes one of them), the others stay good.
func (a *ahead) reportWithNext(seq uint16) guest.Quad {
	for i := uint8(0); i < a.n; i++ {
		if a.seqs[i] == seq {
			a.spent |= 1 << i
		}
	}
	return a.reported()
}

// end is what to report before any call other than next: a deferred flush with the numbers
// handed out before it, else the numbers handed out. Nothing is ahead afterwards.
func (a *ahead) end() (report, guest.Quad) {
	if a.flushPending.Load() {
		a.flushPending.Store(false)
		return reportFlush, a.flushTaken
	}
	taken := a.close()
	if taken.Count == 0 {
		return reportNothing, taken
	}
	return reportTake, taken
}

// deferFlush: a flush without a call, when the last start opened the transaction and no call
// since could have ended it; it then waits for the next call (end gives it).
func (a *ahead) deferFlush() bool {
	if !a.open {
		return false
	}
	a.flushTaken = a.close()
	a.flushPending.Store(true)
	return true
}

// close ends the numbers ahead and the transaction as far as the books know.
func (a *ahead) close() guest.Quad {
	taken := a.reported()
	a.numbers = [4]uint64{}
	a.spent = 0
	a.open = false
	return taken
}

// reported is the handed-out sequences, in question order, now reported.
func (a *ahead) reported() guest.Quad {
	var q guest.Quad
	for i := uint8(0); i < a.n; i++ {
		if a.taken&(1<<i) != 0 {
			q.Seqs[q.Count] = a.seqs[i]
			q.Count++
		}
	}
	a.taken = 0
	return q
}

// takeFlush takes a deferred flush to report, if one waits (the numbers ahead of an open
// transaction stay). Under the sequencer's lock, from any goroutine.
func (a *ahead) takeFlush() (guest.Quad, bool) {
	if !a.flushPending.Load() {
		return guest.Quad{}, false
	}
	a.flushPending.Store(false)
	return a.flushTaken, true
}

// reset forgets everything (a new instance, of generation gen, knows nothing of the old one's
// transaction).
func (a *ahead) reset(gen uint64) {
	a.seqs, a.n, a.numbers, a.taken, a.spent = [4]uint16{}, 0, [4]uint64{}, 0, 0
	a.asked, a.nasked, a.open = [4]uint16{}, 0, false
	a.flushPending.Store(false)
	a.flushTaken = guest.Quad{}
	a.gen = gen
}
