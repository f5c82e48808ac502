package sequencer_test

import (
	"sync"
	"testing"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

// The package's goroutine and other goroutines' calls (HeldNumbers, WaitFlushed, Status) run
// beside the command processor's lock-free Next and Flush: run under -race, this proves they
// share nothing unguarded; and the numbers stay dense.
func TestOtherGoroutinesCallsBesideTheCommandProcessorKeepNumbersDense(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1, 2)}, st, sequencer.WithSettleAfter(time.Microsecond))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = s.HeldNumbers()
			_ = s.Status()
		}
	}()
	last := map[WSID]Number{}
	for i := 0; i < 3000; i++ {
		ws := WSID(i % 3)
		o := start(t, s, 1, ws)
		a := next(t, s, 1)
		_ = next(t, s, 2)
		if a != last[ws]+1 {
			t.Fatalf("transaction %d: workspace %d got %d after %d", i, ws, a, last[ws])
		}
		last[ws] = a
		_ = st.AppendEvent(o, []SeqValue{val(ws, 1, a)})
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			time.Sleep(100 * time.Microsecond) // idle: the goroutine settles the flush
		}
	}
	close(stop)
	wg.Wait()
	if err := s.WaitFlushed(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st.Number(2, 1) != last[2] {
		t.Fatalf("view %d, want %d", st.Number(2, 1), last[2])
	}
}
