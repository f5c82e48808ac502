package sequencer_test

import (
	"errors"
	"math/rand"
	"testing"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

// The numbers-ahead path (Start, Next, Flush: one call into the plugin per transaction) must
// hand out exactly what plain calls do (StartNext, then Flush: no number ahead), whatever the
// sequences a transaction asks for (repeats, unknown ones, more than four, none), with failed
// transactions (Actualize) among them.
func TestNumbersAheadHandOutWhatPlainCallsDo(t *testing.T) {
	p := sequencer.Params{SeqTypes: map[sequencer.WSKind]map[SeqID]Number{1: {1: 1, 2: 10, 3: 100, 4: 1000, 5: 5}}}
	ahead, plain := sequencer.NewMemoryStorage(), sequencer.NewMemoryStorage()
	a, b := open(t, p, ahead), open(t, p, plain)
	rng := rand.New(rand.NewSource(7))
	for tx := 0; tx < 400; tx++ {
		ws := WSID(rng.Intn(5))
		var seqs []SeqID
		if rng.Intn(4) > 0 { // often the same shape as the last transaction, as a processor does
			seqs = []SeqID{1, 2, 3}
		} else {
			for n := rng.Intn(7); n > 0; n-- {
				seqs = append(seqs, SeqID(rng.Intn(7)))
			}
		}
		oa := start(t, a, 1, ws)
		var got []Number
		refused := false
		for _, q := range seqs {
			n, err := a.Next(q)
			if errors.Is(err, sequencer.ErrUnknownSeqID) {
				refused = true
				break
			}
			if err != nil {
				t.Fatalf("tx %d: Next(%d): %v", tx, q, err)
			}
			got = append(got, n)
		}
		var want []Number
		var ob sequencer.PLogOffset
		known := seqs
		if refused {
			known = seqs[:len(got)]
		}
		for {
			o, ok, numbers, err := b.StartNext(1, ws, known, nil)
			if err != nil {
				t.Fatalf("tx %d: StartNext: %v", tx, err)
			}
			if ok {
				ob, want = o, numbers
				break
			}
		}
		if oa != ob || !equal(got, want) {
			t.Fatalf("tx %d %v: ahead gave offset %d numbers %v, plain calls %d %v", tx, seqs, oa, got, ob, want)
		}
		if refused || rng.Intn(10) == 0 { // the command failed
			for _, s := range []*sequencer.Sequencer{a, b} {
				if err := s.Actualize(); err != nil {
					t.Fatal(err)
				}
				if err := s.WaitReady(ctx(t)); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		for k, st := range []*sequencer.MemoryStorage{ahead, plain} {
			var vs []SeqValue
			for j, q := range known {
				vs = append(vs, val(ws, q, []([]Number){got, want}[k][j]))
			}
			if err := st.AppendEvent(oa, vs); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

func equal(a, b []Number) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A flush answered without a call reaches the view on its own, without a later call.
func TestADeferredFlushReachesTheViewWithoutAnotherCall(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1)}, st)
	o := start(t, s, 1, 3)
	n := next(t, s, 1)
	_ = st.AppendEvent(o, []SeqValue{val(3, 1, n)})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.Status() != sequencer.StatusReady {
		t.Fatalf("status after Flush: %v", s.Status())
	}
	if err := s.WaitFlushed(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st.Number(3, 1) != n {
		t.Fatalf("the view holds %d, want %d", st.Number(3, 1), n)
	}
	if s.Status() != sequencer.StatusReady {
		t.Fatalf("status once the flush was reported: %v", s.Status())
	}
}
