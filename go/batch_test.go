package sequencer_test

import (
	"errors"
	"testing"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

func TestBatchesNumberDenseOffsetsAndContinueEachWorkspace(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1, 2, 3, 4)}, st)
	seqs := []SeqID{1, 2, 3}
	var ws []WSID
	for i := 0; i < 64; i++ {
		ws = append(ws, WSID(i%10))
	}
	last := map[WSID]Number{}
	var numbers []Number
	var want sequencer.PLogOffset = 1
	for round := 0; round < 5; round++ {
		var b sequencer.Batch
		var err error
		if round == 0 {
			b, err = s.StartBatch(1, ws, seqs, numbers)
		} else {
			b, err = s.FlushStartBatch(1, ws, seqs, numbers)
		}
		if err != nil {
			t.Fatal(err)
		}
		numbers = b.Numbers
		if b.FirstOffset != want || b.Started != len(ws) || b.NotNow || len(b.Numbers) != 3*len(ws) {
			t.Fatalf("round %d: %+v (want first offset %d)", round, b, want)
		}
		for e, w := range ws {
			n := b.Numbers[3*e]
			if n != last[w]+1 {
				t.Fatalf("round %d event %d: workspace %d got %d after %d", round, e, w, n, last[w])
			}
			last[w] = n
			_ = st.AppendEvent(b.FirstOffset+sequencer.PLogOffset(e), []SeqValue{val(w, 1, n)})
		}
		want += sequencer.PLogOffset(len(ws))
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFlushed(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st.Number(3, 1) != last[3] {
		t.Fatalf("view %d, want %d", st.Number(3, 1), last[3])
	}
	if _, err := s.StartBatch(1, ws, []SeqID{1, 2, 3, 4, 1}, nil); !errors.Is(err, sequencer.ErrInvalidParams) {
		t.Fatalf("five sequences: %v", err)
	}
}

func TestOneEventPerCallMatchesStartAndNext(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1, 2, 3, 4, 5)}, st)
	o, ok, n, err := s.StartNext(1, 9, []SeqID{1, 2, 3}, nil)
	if err != nil || !ok || o != 1 || !equal(n, []Number{1, 1, 1}) {
		t.Fatalf("StartNext: %d %v %v %v", o, ok, n, err)
	}
	// More than four sequences cross as lists.
	o, ok, n, err = s.FlushStartNext(1, 9, []SeqID{1, 2, 3, 4, 5, 1}, n)
	if err != nil || !ok || o != 2 || !equal(n, []Number{2, 2, 2, 1, 1, 3}) {
		t.Fatalf("FlushStartNext with lists: %d %v %v %v", o, ok, n, err)
	}
	o, ok, n, err = s.FlushStartNext(1, 9, []SeqID{2}, n)
	if err != nil || !ok || o != 3 || !equal(n, []Number{3}) {
		t.Fatalf("FlushStartNext: %d %v %v %v", o, ok, n, err)
	}
	if _, _, _, err := s.StartNext(1, 9, []SeqID{1}, nil); !errors.Is(err, sequencer.ErrTransactionInProgress) {
		t.Fatalf("StartNext in a transaction: %v", err)
	}
}

func TestTheFacadeNumbersEventsAndRepeatsIdsAfterCancel(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	ev, err := sequencer.NewEvents(sequencer.Params{}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if err := ev.Sequencer().WaitReady(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if ev.Status() != sequencer.SequenceReady {
		t.Fatalf("status %v", ev.Status())
	}
	for i := 0; i < 3; i++ {
		plog, wlog, ok, err := ev.StartEvent(77)
		if err != nil || !ok || plog != sequencer.PLogOffset(i+1) || wlog != sequencer.WLogOffset(i+1) {
			t.Fatalf("event %d: %d %d %v %v", i, plog, wlog, ok, err)
		}
		if ev.Status() != sequencer.SequenceEventing {
			t.Fatalf("status in an event: %v", ev.Status())
		}
		id, _ := ev.NextRecID()
		cid, _ := ev.NextCRecID()
		if id != sequencer.RecordID(322680000131072+i) || cid != sequencer.RecordID(322685000131072+i) {
			t.Fatalf("event %d: ids %d %d", i, id, cid)
		}
		if i == 2 {
			break
		}
		_ = st.AppendEvent(plog, []SeqValue{val(77, 1, Number(wlog)), val(77, 2, Number(id)), val(77, 3, Number(cid))})
		if err := ev.FinishEvent(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.CancelEvent(); err != nil {
		t.Fatal(err)
	}
	if err := ev.CancelEvent(); !errors.Is(err, sequencer.ErrNoTransaction) && !errors.Is(err, sequencer.ErrAlreadyActualizing) {
		t.Fatalf("CancelEvent without an event: %v", err)
	}
	if err := ev.Sequencer().WaitReady(ctx(t)); err != nil {
		t.Fatal(err)
	}
	plog, wlog, ok, err := ev.StartEvent(77)
	id, _ := ev.NextRecID()
	if err != nil || !ok || plog != 3 || wlog != 3 || id != 322680000131072+2 {
		t.Fatalf("after CancelEvent: %d %d %v %v id %d, want the cancelled event's again", plog, wlog, ok, err, id)
	}
}

func TestABatchStopsAtTheFirstNotNowAndSaysWhy(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1), MaxNumUnflushedValues: 5, LRUCacheSize: 100}, st)
	ws := []WSID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b, err := s.StartBatch(1, ws, []SeqID{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !b.NotNow || b.Reason != sequencer.NotNowTooManyUnflushed || b.Started == 0 || b.Started >= len(ws) ||
		len(b.Numbers) != b.Started || b.FirstOffset != 1 {
		t.Fatalf("a batch past the limit: %+v", b)
	}
}
