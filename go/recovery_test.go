package sequencer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

// panicky panics in ReadNumbers of workspace trapWS while armed: inside a call into the plugin,
// that is a trap.
type panicky struct {
	*sequencer.MemoryStorage
	armed  atomic.Bool
	trapWS WSID
}

func (p *panicky) ReadNumbers(ws WSID, seqs []SeqID) ([]Number, error) {
	if ws == p.trapWS && p.armed.CompareAndSwap(true, false) {
		panic("injected storage panic")
	}
	return p.MemoryStorage.ReadNumbers(ws, seqs)
}

func TestATrapIsAnErrorAndTheNextCallWorksWithNoNumberReused(t *testing.T) {
	st := &panicky{MemoryStorage: sequencer.NewMemoryStorage(), trapWS: 99}
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1)}, st)
	var last Number
	var lastOffset sequencer.PLogOffset
	for i := 0; i < 5; i++ {
		o := start(t, s, 1, 1)
		n := next(t, s, 1)
		_ = st.AppendEvent(o, []SeqValue{val(1, 1, n)})
		if err := s.Flush(); err != nil { // answered without a call: its report rides on the next Start
			t.Fatal(err)
		}
		last, lastOffset = n, o
	}
	st.armed.Store(true)
	_, _, err := s.Start(1, 99) // carries the deferred flush, then traps reading workspace 99
	if !errors.Is(err, sequencer.ErrTrapped) {
		t.Fatalf("Start with a panicking storage: %v, want ErrTrapped", err)
	}
	var trap *sequencer.TrapError
	if !errors.As(err, &trap) || trap.Recreated != nil || errors.Unwrap(trap) == nil && len(trap.Unwrap()) < 2 {
		t.Fatalf("not a TrapError with a new instance: %#v", err)
	}
	if s.Traps() != 1 {
		t.Fatalf("Traps() = %d, want 1", s.Traps())
	}
	if err := s.WaitReady(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if o := start(t, s, 1, 1); o != lastOffset+1 {
		t.Fatalf("after the trap Start gave offset %d, want %d (dense)", o, lastOffset+1)
	}
	if n := next(t, s, 1); n != last+1 {
		t.Fatalf("after the trap Next gave %d, want %d (none reused)", n, last+1)
	}
}

// counting counts PLog scans and can slow writes down.
type counting struct {
	*sequencer.MemoryStorage
	mu         sync.Mutex
	scans      []sequencer.PLogOffset
	writeDelay time.Duration
	failWrites atomic.Int32
}

func (c *counting) ActualizeSequencesFromPLog(ctx context.Context, offset sequencer.PLogOffset,
	batcher func(ctx context.Context, batch []SeqValue, offset sequencer.PLogOffset) error) error {
	c.mu.Lock()
	c.scans = append(c.scans, offset)
	c.mu.Unlock()
	return c.MemoryStorage.ActualizeSequencesFromPLog(ctx, offset, batcher)
}

func (c *counting) WriteValuesAndNextPLogOffset(batch []SeqValue, offset sequencer.PLogOffset) error {
	time.Sleep(c.writeDelay)
	if c.failWrites.Load() > 0 {
		c.failWrites.Add(-1)
		return errors.New("injected write failure")
	}
	return c.MemoryStorage.WriteValuesAndNextPLogOffset(batch, offset)
}

func TestAReplayHeldBackByUnflushedValuesEndsWithThePLogsNumbers(t *testing.T) {
	st := &counting{MemoryStorage: sequencer.NewMemoryStorage(), writeDelay: 200 * time.Microsecond}
	const events, spaces = 600, 40
	for o := 1; o <= events; o++ {
		ws := WSID(o % spaces)
		_ = st.AppendEvent(sequencer.PLogOffset(o), []SeqValue{val(ws, 1, Number(o)), val(ws, 2, Number(2*o))})
	}
	p := sequencer.Params{SeqTypes: kinds(1, 1, 2), MaxNumUnflushedValues: 20, LRUCacheSize: 100}
	s := open(t, p, st, sequencer.WithPageEvents(7))
	if o := start(t, s, 1, 5); o != events+1 {
		t.Fatalf("offset %d after replaying %d events", o, events)
	}
	want := Number(events - (events-5)%spaces) // the last event of workspace 5
	if a, b := next(t, s, 1), next(t, s, 2); a != want+1 || b != 2*want+1 {
		t.Fatalf("numbers %d %d, want %d %d", a, b, want+1, 2*want+1)
	}
}

func TestFailedWritesAreRetriedUntilTheViewHoldsTheNumbers(t *testing.T) {
	st := &counting{MemoryStorage: sequencer.NewMemoryStorage()}
	p := sequencer.Params{SeqTypes: kinds(1, 1), RetryDelay: time.Millisecond, MaxRetryDelay: 4 * time.Millisecond}
	s := open(t, p, st)
	st.failWrites.Store(5)
	o := start(t, s, 1, 8)
	n := next(t, s, 1)
	_ = st.AppendEvent(o, []SeqValue{val(8, 1, n)})
	_ = s.Flush()
	if err := s.WaitFlushed(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st.failWrites.Load() != 0 || st.Number(8, 1) != n {
		t.Fatalf("failures left %d, view %d (want %d)", st.failWrites.Load(), st.Number(8, 1), n)
	}
}

// gated holds writes until released.
type gated struct {
	*sequencer.MemoryStorage
	began   chan struct{}
	release chan struct{}
}

func (g *gated) WriteValuesAndNextPLogOffset(batch []SeqValue, offset sequencer.PLogOffset) error {
	select {
	case g.began <- struct{}{}:
	default:
	}
	<-g.release
	return g.MemoryStorage.WriteValuesAndNextPLogOffset(batch, offset)
}

func TestCloseLetsTheWriteInFlightLandFirst(t *testing.T) {
	st := &gated{MemoryStorage: sequencer.NewMemoryStorage(), began: make(chan struct{}, 1), release: make(chan struct{})}
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1)}, st)
	o := start(t, s, 1, 2)
	n := next(t, s, 1)
	_ = st.AppendEvent(o, []SeqValue{val(2, 1, n)})
	_ = s.Flush()
	_, _ = s.HeldNumbers() // any call reports the flush: the flusher begins its write
	<-st.began
	closed := make(chan struct{})
	go func() { _ = s.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a write was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(st.release)
	<-closed
	if st.Number(2, 1) != n {
		t.Fatalf("the write in flight did not land: view %d, want %d", st.Number(2, 1), n)
	}
}

// panickyWrites panics in its first writes (outside any call into the plugin).
type panickyWrites struct {
	*sequencer.MemoryStorage
	left atomic.Int32
}

func (p *panickyWrites) WriteValuesAndNextPLogOffset(batch []SeqValue, offset sequencer.PLogOffset) error {
	if p.left.Add(-1) >= 0 {
		panic("injected write panic")
	}
	return p.MemoryStorage.WriteValuesAndNextPLogOffset(batch, offset)
}

func TestAStorageThatPanicsInTheBackgroundFailsTheWriteWhichIsRetried(t *testing.T) {
	st := &panickyWrites{MemoryStorage: sequencer.NewMemoryStorage()}
	p := sequencer.Params{SeqTypes: kinds(1, 1), RetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Millisecond}
	s := open(t, p, st)
	st.left.Store(3)
	o := start(t, s, 1, 4)
	n := next(t, s, 1)
	_ = st.AppendEvent(o, []SeqValue{val(4, 1, n)})
	_ = s.Flush()
	if err := s.WaitFlushed(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st.Number(4, 1) != n {
		t.Fatalf("view %d, want %d", st.Number(4, 1), n)
	}
}
