package sequencer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// gatedWrites holds each write until released.
type gatedWrites struct {
	*MemoryStorage
	began   chan struct{}
	release chan struct{}
	open    atomic.Bool // no gate any more
}

func (g *gatedWrites) WriteValuesAndNextPLogOffset(batch []SeqValue, offset PLogOffset) error {
	if !g.open.Load() {
		g.began <- struct{}{}
		<-g.release
	}
	return g.MemoryStorage.WriteValuesAndNextPLogOffset(batch, offset)
}

// A trap inside a call of the sequencer's own goroutine (here: the write a delivery begins)
// replaces the instance; the command processor's open transaction is gone, and its next call
// says so (ErrTrapped) instead of handing out a number of the dropped instance; then the
// numbers go on from the PLog.
func TestATrapInTheBackgroundEndsTheOpenTransactionAndLosesNoNumber(t *testing.T) {
	st := &gatedWrites{MemoryStorage: NewMemoryStorage(), began: make(chan struct{}, 8), release: make(chan struct{}, 8)}
	s, err := New(Params{SeqTypes: map[WSKind]map[SeqID]Number{1: {1: 1}}}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		st.open.Store(true)
		select {
		case st.release <- struct{}{}: // a write held at the gate, if any
		default:
		}
		_ = s.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tx := func() (PLogOffset, Number) {
		o, err := s.StartWithin(ctx, 1, 5)
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Next(1)
		if err != nil {
			t.Fatal(err)
		}
		return o, n
	}
	o1, n1 := tx()
	_ = st.AppendEvent(o1, []SeqValue{{Key: NumberKey{WSID: 5, SeqID: 1}, Value: n1}})
	_ = s.Flush()
	o2, n2 := tx() // carries the first flush: the flusher begins a write, held at the gate
	<-st.began
	_ = st.AppendEvent(o2, []SeqValue{{Key: NumberKey{WSID: 5, SeqID: 1}, Value: n2}})
	_ = s.Flush()
	o3, _ := tx() // carries the second flush: its values wait behind the write in flight
	s.mu.Lock()
	s.h.trapNextWrite = true
	s.mu.Unlock()
	st.release <- struct{}{} // the write lands; its delivery begins the next write, which traps
	deadline := time.Now().Add(10 * time.Second)
	for s.Traps() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s.Traps() != 1 {
		t.Fatalf("Traps() = %d, want 1", s.Traps())
	}
	if _, err := s.Next(1); !errors.Is(err, ErrTrapped) {
		t.Fatalf("Next in the transaction the trap ended: %v, want ErrTrapped", err)
	}
	st.open.Store(true)
	select {
	case <-st.began: // the new instance's write, if it began one before the gate opened
		st.release <- struct{}{}
	default:
	}
	o4, n4 := tx()
	if o4 != o3 || o4 != o2+1 || n4 != n2+1 {
		t.Fatalf("after the trap: offset %d number %d; want offset %d (= %d + 1), number %d", o4, n4, o3, o2, n2+1)
	}
}
