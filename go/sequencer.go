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

// Sequencer is one partition's sequencer: one instance of the plugin behind a lock, and a
// goroutine that performs the storage work it begins (the flusher's writes, the actualizer's
// reads) and wakes it when it asks.
//
// The transaction calls (Start, Next, Flush, Actualize, Stage, the batched calls and the
// facade's) belong to one command processor: do not call them concurrently with each other, as
// the original's ISequencer asks (Next and Flush often make no call into the plugin and take
// no lock). Status, HeldNumbers, WaitReady, WaitFlushed, Traps and Close may be called from any
// goroutine at any time. Calls into the plugin are serialised by the lock.
type Sequencer struct {
	mu    sync.Mutex
	inst  *guest.Instance // nil after a trap until a new one is made
	h     *host
	gen   uint64
	books ahead
	// starts counts Start calls (the tasks see the command processor is busy by it).
	starts uint64
	closed bool
	// isClosed is closed, readable without the lock.
	isClosed atomic.Bool
	params   guest.Params
	storage  Storage
	epoch    time.Time

	// status is the last status known (Status), readable without the lock.
	status atomic.Uint32
	// traps counts the instances dropped after a trap.
	traps atomic.Uint64
	// current is gen, readable without the lock: the tasks skip work of dropped instances.
	current atomic.Uint64

	tasks *tasks

	// Reused buffers of the batched calls.
	quadSeqs []uint16
	wsBuf    []uint64
	numBuf   []uint64
}

// Option configures New.
type Option func(*options)

type options struct {
	settleAfter time.Duration
	pageEvents  int
}

// WithSettleAfter sets how long a flush answered without a call into the plugin (the
// numbers-ahead path) waits for the next call before the sequencer reports it itself, so its
// values reach the flusher (default 200 µs).
func WithSettleAfter(d time.Duration) Option { return func(o *options) { o.settleAfter = d } }

// WithPageEvents sets how many PLog events one page of the actualizer's replay holds at most
// (default 4,096).
func WithPageEvents(n int) Option { return func(o *options) { o.pageEvents = n } }

// New makes a sequencer over storage: it starts actualizing at once (it reads the stored PLog
// offset, then replays the PLog from there), and Start says "not now" until it is ready
// (WaitReady waits for that). Invalid params are refused with ErrInvalidParams.
func New(params Params, storage Storage, opts ...Option) (*Sequencer, error) {
	o := options{settleAfter: 200 * time.Microsecond, pageEvents: 4096}
	for _, f := range opts {
		f(&o)
	}
	if storage == nil {
		return nil, &Error{Code: CodeInvalidParams, Text: "storage is nil"}
	}
	p, err := params.lower()
	if err != nil {
		return nil, err
	}
	return newSequencer(p, storage, o)
}

func newSequencer(p guest.Params, storage Storage, o options) (*Sequencer, error) {
	s := &Sequencer{params: p, storage: storage, epoch: time.Now()}
	s.status.Store(uint32(StatusActualizing))
	s.tasks = newTasks(s, o)
	s.mu.Lock()
	err := s.instantiate()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	go s.tasks.run()
	return s, nil
}

// instantiate makes a new instance and its sequencer (which begins actualizing) under a new
// generation; the work it began goes to the tasks. Under s.mu.
func (s *Sequencer) instantiate() error {
	s.gen++
	h := &host{storage: s.storage, epoch: s.epoch, gen: s.gen}
	h.many, _ = s.storage.(NumbersManyReader)
	inst, err := guest.New(h)
	if err != nil {
		return err
	}
	if err := inst.Create(&s.params); err != nil {
		inst.Close()
		return errorOf(err)
	}
	s.inst, s.h = inst, h
	s.current.Store(s.gen)
	s.forward()
	return nil
}

// forward hands what the plugin asked for during the last call (storage work, a wake-up, a
// status) to the tasks goroutine. Under s.mu.
func (s *Sequencer) forward() {
	h := s.h
	if h.statusChanged {
		h.statusChanged = false
		s.setStatus(Status(h.status))
	}
	if len(h.ops) == 0 && !h.wakeChanged {
		return
	}
	s.tasks.post(h)
}

func (s *Sequencer) setStatus(st Status) {
	if s.status.Swap(uint32(st)) != uint32(st) {
		s.tasks.changed()
	}
}

// live is the instance to call, or the error of why there is none (after a trap it makes a
// new one). Under s.mu.
func (s *Sequencer) live() (*guest.Instance, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if s.inst == nil {
		if err := s.instantiate(); err != nil {
			return nil, err
		}
	}
	return s.inst, nil
}

// ready is live for the command processor's transaction calls: the numbers-ahead books of an
// instance dropped since are forgotten. Under s.mu, on the command processor's goroutine.
func (s *Sequencer) ready() (*guest.Instance, error) {
	i, err := s.live()
	if err != nil || s.books.gen == s.gen {
		return i, err
	}
	lost := s.books.gen != 0 && s.books.open
	s.books.reset(s.gen)
	if lost {
		return nil, errLostTransaction
	}
	return i, nil
}

// errLostTransaction answers the first transaction call after the instance trapped in the
// background (a delivery or a wake-up) while a transaction was open: it is gone.
var errLostTransaction = fmt.Errorf("%w: the transaction in progress was lost with an instance that trapped in the background "+
	"(a new one recovers from the PLog: treat the transaction as failed)", ErrTrapped)

// done finishes a call into the plugin: on success what it began goes to the tasks; a trap
// drops the instance and makes a new one (TrapError); a refusal becomes an *Error. Under s.mu.
func (s *Sequencer) done(err error) error {
	if err == nil {
		s.forward()
		return nil
	}
	var trap *guest.Trap
	if !errors.As(err, &trap) {
		s.forward()
		return errorOf(err)
	}
	s.traps.Add(1)
	s.inst.Close()
	s.inst = nil
	e := &TrapError{Call: trap.Call, Cause: trap.Cause}
	e.Recreated = s.instantiate()
	if e.Recreated != nil {
		s.status.Store(uint32(StatusActualizing))
	}
	return e
}

// report tells the plugin what the caller did without a call (numbers handed out ahead, a
// deferred flush) before any call other than next. Under s.mu.
func (s *Sequencer) report(i *guest.Instance) error {
	r, taken := s.books.end()
	switch r {
	case reportTake:
		return i.Take(taken)
	case reportFlush:
		st, err := i.TakeFlush(taken)
		if err == nil {
			s.setStatus(Status(st))
		}
		return err
	}
	return nil
}

// call runs f on the instance after reporting what was done without a call.
func (s *Sequencer) call(f func(i *guest.Instance) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.ready()
	if err != nil {
		return err
	}
	if err := s.report(i); err != nil {
		return s.done(err)
	}
	return s.done(f(i))
}

// Status is what the sequencer is doing, as it last reported it (no call into the plugin).
func (s *Sequencer) Status() Status {
	st := Status(s.status.Load())
	if st == StatusInTransaction && s.books.flushPending.Load() {
		return StatusReady // a flush answered without a call
	}
	return st
}

// HeldNumbers counts the numbers the sequencer holds in memory, by where (numbers handed out
// ahead by Next are counted once the next call reports them). Any goroutine may call it.
func (s *Sequencer) HeldNumbers() (HeldNumbers, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.live()
	if err != nil {
		return HeldNumbers{}, err
	}
	if err := s.done(s.settle(i)); err != nil {
		return HeldNumbers{}, err
	}
	h, err := i.HeldNumbers()
	return HeldNumbers(h), s.done(err)
}

// Traps counts the instances dropped after a trap since New.
func (s *Sequencer) Traps() uint64 { return s.traps.Load() }

// Close stops the sequencer: the storage write in flight, if any, lands first; the other
// storage work is abandoned (a PLog scan is cancelled through its ctx); later calls are
// refused with ErrClosed. What was flushed and not yet written is in the PLog: the next
// sequencer over the storage recovers it. Call WaitFlushed first to have the view written.
// Calling Close again does nothing.
func (s *Sequencer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.isClosed.Store(true)
	inst := s.inst
	s.inst = nil
	if inst != nil {
		_ = inst.Cleanup()
	}
	s.status.Store(uint32(StatusCleanedUp))
	s.mu.Unlock()
	s.tasks.stop()
	if inst != nil {
		inst.Close()
	}
	return nil
}

// WaitReady waits until the sequencer is ready to number events (it has actualized), or ctx
// is done (ctx.Err()), or it is closed (ErrClosed).
func (s *Sequencer) WaitReady(ctx context.Context) error {
	return s.tasks.waitFor(ctx, func() (bool, error) {
		switch s.Status() {
		case StatusReady, StatusInTransaction:
			return true, nil
		case StatusCleanedUp:
			return true, ErrClosed
		}
		return false, nil
	})
}

// WaitFlushed waits until every number flushed so far is in the storage's view (no value waits
// to be written and no storage work is outstanding), or ctx is done, or the sequencer is
// closed (ErrClosed).
func (s *Sequencer) WaitFlushed(ctx context.Context) error {
	return s.tasks.waitFor(ctx, func() (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		i, err := s.live()
		if err != nil {
			return true, err
		}
		if err := s.done(s.settle(i)); err != nil {
			return true, err
		}
		h, err := i.HeldNumbers()
		if err = s.done(err); err != nil {
			return true, err
		}
		st := s.Status()
		return h.Unflushed == 0 && st != StatusActualizing && s.tasks.idle(), nil
	})
}

// settle reports a deferred flush, if one waits (the numbers ahead of an open transaction
// stay). Under s.mu, from any goroutine.
func (s *Sequencer) settle(i *guest.Instance) error {
	if s.books.gen != s.gen {
		return nil // the flush was lost with its instance; the PLog holds its event
	}
	taken, ok := s.books.takeFlush()
	if !ok {
		return nil
	}
	st, err := i.TakeFlush(taken)
	if err == nil {
		s.setStatus(Status(st))
	}
	return err
}
