package main

import (
	"context"
	"sync"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

// benchStorage is the workloads' storage (docs/BENCHMARKS.md "Beside the Go original"): the
// view in a map under a mutex, the stored offset, an empty PLog (the command processor's
// appends are not measured), and a write that completes no sooner than writeDelay after it
// began (group commit).
type benchStorage struct {
	mu         sync.Mutex
	view       map[sequencer.NumberKey]sequencer.Number
	next       sequencer.PLogOffset
	writeDelay time.Duration
	writes     int
}

func newBenchStorage(writeDelay time.Duration) *benchStorage {
	return &benchStorage{view: map[sequencer.NumberKey]sequencer.Number{}, writeDelay: writeDelay}
}

func (b *benchStorage) ReadNumbers(ws sequencer.WSID, seqs []sequencer.SeqID) ([]sequencer.Number, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]sequencer.Number, len(seqs))
	for i, s := range seqs {
		out[i] = b.view[sequencer.NumberKey{WSID: ws, SeqID: s}]
	}
	return out, nil
}

func (b *benchStorage) WriteValuesAndNextPLogOffset(batch []sequencer.SeqValue, offset sequencer.PLogOffset) error {
	began := time.Now()
	b.mu.Lock()
	for _, v := range batch {
		b.view[v.Key] = v.Value
	}
	b.next = offset
	b.writes++
	b.mu.Unlock()
	if d := time.Until(began.Add(b.writeDelay)); d > 0 {
		time.Sleep(d)
	}
	return nil
}

func (b *benchStorage) ReadNextPLogOffset() (sequencer.PLogOffset, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next, nil
}

func (b *benchStorage) ActualizeSequencesFromPLog(ctx context.Context, offset sequencer.PLogOffset,
	batcher func(ctx context.Context, batch []sequencer.SeqValue, offset sequencer.PLogOffset) error) error {
	return ctx.Err()
}
