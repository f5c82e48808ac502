package sequencer_test

import (
	"context"
	"testing"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

type (
	WSID     = sequencer.WSID
	SeqID    = sequencer.SeqID
	Number   = sequencer.Number
	SeqValue = sequencer.SeqValue
)

func kinds(k sequencer.WSKind, seqs ...SeqID) map[sequencer.WSKind]map[SeqID]Number {
	m := map[SeqID]Number{}
	for _, s := range seqs {
		m[s] = 1
	}
	return map[sequencer.WSKind]map[SeqID]Number{k: m}
}

func val(ws WSID, seq SeqID, n Number) SeqValue {
	return SeqValue{Key: sequencer.NumberKey{WSID: ws, SeqID: seq}, Value: n}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// open makes a ready sequencer over storage, closed at the test's end.
func open(t *testing.T, p sequencer.Params, storage sequencer.Storage, opts ...sequencer.Option) *sequencer.Sequencer {
	t.Helper()
	s, err := sequencer.New(p, storage, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.WaitReady(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

// start is Start that must start.
func start(t *testing.T, s *sequencer.Sequencer, kind sequencer.WSKind, ws WSID) sequencer.PLogOffset {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		o, ok, err := s.Start(kind, ws)
		if err != nil {
			t.Fatalf("Start(%d, %d): %v", kind, ws, err)
		}
		if ok {
			return o
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("Start(%d, %d) still not now after 10 s", kind, ws)
	return 0
}

func next(t *testing.T, s *sequencer.Sequencer, seq SeqID) Number {
	t.Helper()
	n, err := s.Next(seq)
	if err != nil {
		t.Fatalf("Next(%d): %v", seq, err)
	}
	return n
}
