package sequencer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// tasks is the goroutine that performs the storage work the plugin begins, in the order it
// was begun, outside the sequencer's lock, and delivers each outcome under it; it calls pump
// when the wake-up the plugin asked for comes, and reports a deferred flush that no call
// reported soon enough. It never calls into the plugin from inside an import: it takes the
// lock like any caller.
type tasks struct {
	s *Sequencer
	o options

	mu      sync.Mutex
	queue   []op
	wakeAt  time.Time
	wakeSet bool
	busy    bool

	kick        chan struct{}
	settleReq   chan struct{}
	settleArmed atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	waiters   atomic.Int32
	changedMu sync.Mutex
	changedCh chan struct{}

	scan *plogScan
	page []uint64
}

func newTasks(s *Sequencer, o options) *tasks {
	t := &tasks{
		s: s, o: o, kick: make(chan struct{}, 1), settleReq: make(chan struct{}, 1),
		done: make(chan struct{}), changedCh: make(chan struct{}),
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// post takes what the plugin asked for in a call (ops, a wake-up) from h. Under s.mu.
func (t *tasks) post(h *host) {
	t.mu.Lock()
	t.queue = append(t.queue, h.ops...)
	if h.wakeChanged {
		t.wakeSet, t.wakeAt = h.wakeSet, h.deadline(h.wakeAt)
		h.wakeChanged = false
	}
	t.mu.Unlock()
	clear(h.ops)
	h.ops = h.ops[:0]
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// armSettle asks for a deferred flush to be reported after settleAfter unless a call does it
// first (once per window, not once per flush).
func (t *tasks) armSettle() {
	if !t.settleArmed.Load() && !t.settleArmed.Swap(true) {
		select {
		case t.settleReq <- struct{}{}:
		default:
		}
	}
}

// idle is true when no storage work is queued or being performed.
func (t *tasks) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue) == 0 && !t.busy
}

// stop ends the goroutine after the operation it performs, if any (a write in flight lands),
// and waits for it; queued work is abandoned.
func (t *tasks) stop() {
	t.cancel()
	<-t.done
	t.changed()
}

func (t *tasks) run() {
	defer close(t.done)
	defer t.endScan()
	wake := time.NewTimer(time.Hour)
	settle := time.NewTimer(time.Hour)
	var seen uint64 // the sequencer's starts when the settle timer was set
	defer wake.Stop()
	defer settle.Stop()
	for {
		t.mu.Lock()
		wakeSet, wakeAt := t.wakeSet, t.wakeAt
		t.mu.Unlock()
		if wakeSet {
			wake.Reset(time.Until(wakeAt))
		} else {
			wake.Stop()
		}
		select {
		case <-t.ctx.Done():
			return
		case <-t.kick:
		case <-t.settleReq:
			seen = t.startsNow()
			settle.Reset(t.o.settleAfter)
		case <-settle.C:
			if !t.settleIfIdle(&seen) {
				settle.Reset(t.o.settleAfter) // still busy: its next Start reports the flush
			}
		case <-wake.C:
			t.mu.Lock()
			due := t.wakeSet && !time.Now().Before(t.wakeAt)
			if due {
				t.wakeSet = false
			}
			t.mu.Unlock()
			if due {
				t.withInstance(0, func(_ *Sequencer, i *guest.Instance) error { return i.Pump() })
			}
		}
		t.drain()
		t.changed()
	}
}

// startsNow is the sequencer's count of Starts.
func (t *tasks) startsNow() uint64 {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.starts
}

// settleIfIdle reports a deferred flush if the command processor made no Start since *seen
// (else *seen moves on and it returns false: the caller is busy, and its next Start carries
// the flush). A caller holding the lock is busy too: the goroutine does not wait for it.
func (t *tasks) settleIfIdle(seen *uint64) bool {
	s := t.s
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	if s.starts != *seen {
		*seen = s.starts
		return false
	}
	t.settleArmed.Store(false)
	if !s.closed && s.inst != nil {
		_ = s.done(s.settle(s.inst))
	}
	return true
}

// drain performs the queued operations in order until none is left or the sequencer stops.
func (t *tasks) drain() {
	for t.ctx.Err() == nil {
		t.mu.Lock()
		if len(t.queue) == 0 {
			t.mu.Unlock()
			return
		}
		o := t.queue[0]
		t.queue[0] = op{}
		t.queue = t.queue[1:]
		if o.gen != t.s.current.Load() {
			t.mu.Unlock() // an instance dropped after a trap: its work is abandoned
			continue
		}
		t.busy = true
		t.mu.Unlock()
		outcome := t.perform(o)
		t.withInstance(o.gen, func(_ *Sequencer, i *guest.Instance) error {
			err := i.Deliver(o.id, outcome)
			var r *guest.Refusal
			if errors.As(err, &r) && r.Case == guest.MalformedPlogPage {
				// The storage broke the page contract: the plugin retries the read later.
				err = i.Deliver(o.id, &guest.Outcome{Kind: guest.OutcomeFailed, Message: r.Error()})
			}
			return err
		})
		t.mu.Lock()
		t.busy = false
		t.mu.Unlock()
		t.changed()
	}
}

// withInstance runs f on the current instance under the lock, if it is of generation gen (0:
// any) and the sequencer is not closed.
func (t *tasks) withInstance(gen uint64, f func(s *Sequencer, i *guest.Instance) error) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.inst == nil || (gen != 0 && gen != s.gen) {
		return
	}
	_ = s.done(f(s, s.inst))
}

// perform does o against the storage (outside the lock) and returns its outcome. A storage
// method that panics fails the operation (the plugin retries it later).
func (t *tasks) perform(o op) (outcome *guest.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			outcome = failed("storage", fmt.Errorf("panic: %v", p))
		}
	}()
	st := t.s.storage
	switch o.kind {
	case opWrite:
		if err := st.WriteValuesAndNextPLogOffset(o.batch, PLogOffset(o.arg)); err != nil {
			return failed("WriteValuesAndNextPLogOffset", err)
		}
		return &guest.Outcome{Kind: guest.OutcomeWritten}
	case opReadNextOffset:
		n, err := st.ReadNextPLogOffset()
		if err != nil {
			return failed("ReadNextPLogOffset", err)
		}
		return &guest.Outcome{Kind: guest.OutcomeNextOffset, NextOffset: uint64(n)}
	default:
		return t.readPage(o.arg)
	}
}

func failed(what string, err error) *guest.Outcome {
	return &guest.Outcome{Kind: guest.OutcomeFailed, Message: what + ": " + err.Error()}
}

// changed wakes the goroutines waiting for a change (waitFor).
func (t *tasks) changed() {
	if t.waiters.Load() == 0 {
		return
	}
	t.changedMu.Lock()
	close(t.changedCh)
	t.changedCh = make(chan struct{})
	t.changedMu.Unlock()
}

// waitFor calls cond after every step of the tasks (and every 10 ms) until it says done, or
// ctx is done.
func (t *tasks) waitFor(ctx context.Context, cond func() (bool, error)) error {
	t.waiters.Add(1)
	defer t.waiters.Add(-1)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		t.changedMu.Lock()
		ch := t.changedCh
		t.changedMu.Unlock()
		if ok, err := cond(); ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-tick.C:
		}
	}
}
