package sequencer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

func TestAnEmptyStorageNumbersFromOffset1AndTheInitialValues(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	p := sequencer.Params{SeqTypes: map[sequencer.WSKind]map[SeqID]Number{1: {1: 1, 2: 100}}}
	s := open(t, p, st)
	for i := 0; i < 3; i++ {
		o := start(t, s, 1, 7)
		a, b := next(t, s, 1), next(t, s, 2)
		if want := sequencer.PLogOffset(i + 1); o != want || a != Number(i+1) || b != Number(100+i) {
			t.Fatalf("transaction %d: offset %d, numbers %d %d; want %d, %d %d", i, o, a, b, want, i+1, 100+i)
		}
		if err := st.AppendEvent(o, []SeqValue{val(7, 1, a), val(7, 2, b)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WaitFlushed(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if got := [2]Number{st.Number(7, 1), st.Number(7, 2)}; got != [2]Number{3, 102} {
		t.Fatalf("the view holds %v, want [3 102]", got)
	}
}

func TestANewSequencerContinuesAfterThePLogsLastEvent(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	_ = st.AppendEvent(42, []SeqValue{val(1000, 1, 13)})
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1)}, st)
	if o := start(t, s, 1, 1000); o != 43 {
		t.Fatalf("offset %d, want 43", o)
	}
	if n := next(t, s, 1); n != 14 {
		t.Fatalf("number %d, want 14", n)
	}
}

func TestMisuseIsATypedErrorAndChangesNothing(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1)}, st)
	if _, err := s.Next(1); !errors.Is(err, sequencer.ErrNoTransaction) {
		t.Fatalf("Next without Start: %v", err)
	}
	if err := s.Flush(); !errors.Is(err, sequencer.ErrNoTransaction) {
		t.Fatalf("Flush without Start: %v", err)
	}
	if _, _, err := s.Start(9, 1); !errors.Is(err, sequencer.ErrUnknownWSKind) {
		t.Fatalf("Start of an unknown kind: %v", err)
	}
	o := start(t, s, 1, 5)
	if _, _, err := s.Start(1, 6); !errors.Is(err, sequencer.ErrTransactionInProgress) {
		t.Fatalf("a second Start: %v", err)
	}
	var e *sequencer.Error
	if _, err := s.Next(4); !errors.As(err, &e) || e.Code != sequencer.CodeUnknownSeqID || e.Seq != 4 {
		t.Fatalf("Next of an unknown sequence: %v", err)
	}
	if n := next(t, s, 1); n != 1 {
		t.Fatalf("after the refusals Next gave %d, want 1", n)
	}
	if err := s.Actualize(); err != nil {
		t.Fatal(err)
	}
	if err := s.Actualize(); !errors.Is(err, sequencer.ErrAlreadyActualizing) {
		t.Fatalf("Actualize while actualizing: %v", err)
	}
	if err := s.WaitReady(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if o2 := start(t, s, 1, 5); o2 != o || next(t, s, 1) != 1 {
		t.Fatalf("after Actualize: offset %d (want %d) or the number changed", o2, o)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Start(1, 5); !errors.Is(err, sequencer.ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	if err := s.Flush(); !errors.Is(err, sequencer.ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if s.Status() != sequencer.StatusCleanedUp {
		t.Fatalf("status after Close: %v", s.Status())
	}
}

func TestInvalidParamsAreRefusedWithTheRuleThatFailed(t *testing.T) {
	for name, p := range map[string]sequencer.Params{
		"no kind":          {},
		"initial value 0":  {SeqTypes: map[sequencer.WSKind]map[SeqID]Number{1: {1: 0}}},
		"negative limit":   {SeqTypes: kinds(1, 1), MaxNumUnflushedValues: -1},
		"jitter above 100": {SeqTypes: kinds(1, 1), RetryJitterPercent: 101},
	} {
		_, err := sequencer.New(p, sequencer.NewMemoryStorage())
		var e *sequencer.Error
		if !errors.As(err, &e) || e.Code != sequencer.CodeInvalidParams || e.Text == "" {
			t.Errorf("%s: %v, want invalid-params with a reason", name, err)
		}
	}
}

func TestAStorageFailureInStartIsErrStorageAndNothingBegins(t *testing.T) {
	st := &failingNumbers{MemoryStorage: sequencer.NewMemoryStorage(), fail: 1}
	s := open(t, sequencer.Params{SeqTypes: kinds(1, 1)}, st)
	_, _, err := s.Start(1, 1)
	var e *sequencer.Error
	if !errors.Is(err, sequencer.ErrStorage) || !errors.As(err, &e) || !strings.Contains(e.Text, "injected") {
		t.Fatalf("Start with a failing ReadNumbers: %v, want ErrStorage with the storage's message", err)
	}
	if o := start(t, s, 1, 1); o != 1 {
		t.Fatalf("the next Start gave offset %d, want 1", o)
	}
}

type failingNumbers struct {
	*sequencer.MemoryStorage
	fail int
}

func (f *failingNumbers) ReadNumbers(ws WSID, seqs []SeqID) ([]Number, error) {
	if f.fail > 0 {
		f.fail--
		return nil, errors.New("injected")
	}
	return f.MemoryStorage.ReadNumbers(ws, seqs)
}

func TestStartWithinWaitsOutTheActualizationOrGivesUpWithTheContext(t *testing.T) {
	st := sequencer.NewMemoryStorage()
	for o := sequencer.PLogOffset(1); o <= 2000; o++ {
		_ = st.AppendEvent(o, []SeqValue{val(WSID(o%9), 1, Number(o))})
	}
	s, err := sequencer.New(sequencer.Params{SeqTypes: kinds(1, 1)}, st, sequencer.WithPageEvents(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o, err := s.StartWithin(ctx(t), 1, 3)
	if err != nil || o != 2001 {
		t.Fatalf("StartWithin: %d, %v; want 2001", o, err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Flush()
	if err := s.Actualize(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartWithin(gone, 1, 3); !errors.Is(err, context.Canceled) && err != nil {
		t.Fatalf("StartWithin a cancelled context: %v", err)
	}
}
