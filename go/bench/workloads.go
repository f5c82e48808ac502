package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

const (
	kind    sequencer.WSKind = 1
	batch                    = 64
	warmUp                   = 1000
	w4Views                  = 10
)

var seqs = []sequencer.SeqID{1, 2, 3}

// params are the workloads' (docs/BENCHMARKS.md "Method"): kind 1 with sequences 1..4 from 1.
func params() sequencer.Params {
	return sequencer.Params{
		SeqTypes:              map[sequencer.WSKind]map[sequencer.SeqID]sequencer.Number{kind: {1: 1, 2: 1, 3: 1, 4: 1}},
		MaxNumUnflushedValues: 1_000_000,
		LRUCacheSize:          100_000,
	}
}

// workload is W1, W2 or W4: the workspace of the i-th transaction, how many to time, and the
// view to seed.
type workload struct {
	name string
	ws   func(i int) sequencer.WSID
	n    int
	seed func(*benchStorage)
	warm bool
}

func workloads(scale float64) map[string]workload {
	n := func(full int) int { return max(1, int(float64(full)*scale)) }
	w4 := n(100_000)
	return map[string]workload{
		"W1": {name: "W1 tx", ws: func(i int) sequencer.WSID { return sequencer.WSID(i % 1000) }, n: n(600_000), warm: true},
		"W2": {name: "W2 tx-hot", ws: func(int) sequencer.WSID { return 7 }, n: n(600_000), warm: true},
		"W4": {name: "W4 cold", ws: func(i int) sequencer.WSID { return sequencer.WSID(i) }, n: w4, seed: func(b *benchStorage) {
			for ws := 0; ws < w4; ws++ {
				for s := sequencer.SeqID(1); s <= 4; s++ {
					b.view[sequencer.NumberKey{WSID: sequencer.WSID(ws), SeqID: s}] = w4Views
				}
			}
		}},
	}
}

// paths are the ways a transaction goes through the package.
var paths = []string{"per step (Start, 3 Next, Flush)", "1 event/call (FlushStartNext)", "batches of 64 (FlushStartBatch)"}

// runTx times w.n transactions along path on a fresh sequencer: ns per transaction.
func runTx(w workload, path string, writeDelay time.Duration) (float64, error) {
	st := newBenchStorage(writeDelay)
	if w.seed != nil {
		w.seed(st)
	}
	s, err := sequencer.New(params(), st)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		return 0, err
	}
	run := pathFunc(s, path)
	if w.warm {
		// Warm-up outside the clock: the workspaces' first loads (the offsets go on).
		if err := run(warmUp, w.ws); err != nil {
			return 0, err
		}
		if err := s.WaitFlushed(ctx); err != nil {
			return 0, err
		}
	}
	cpu0, t := cpuTime(), time.Now()
	if err := run(w.n, w.ws); err != nil {
		return 0, err
	}
	ns := float64(time.Since(t).Nanoseconds()) / float64(w.n)
	lastCPU = float64(cpuTime()-cpu0) / float64(w.n)
	return ns, nil
}

// lastCPU is the process's CPU time (user and system, every thread) per transaction of the
// last runTx: less moved by other processes' load than the wall time.
var lastCPU float64

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type txRun func(n int, ws func(int) sequencer.WSID) error

// notNowFor bounds how long a run waits out "not now" (max_unflushed_values is large enough
// that it never does but for a stalled storage).
const notNowFor = 30 * time.Second

// stalled says whether a run waited out "not now" since since for longer than notNowFor.
func stalled(since *time.Time) error {
	if since.IsZero() {
		*since = time.Now()
	} else if time.Since(*since) > notNowFor {
		return fmt.Errorf("still not now after %v", notNowFor)
	}
	return nil
}

func pathFunc(s *sequencer.Sequencer, path string) txRun {
	switch path {
	case paths[0]:
		return func(n int, ws func(int) sequencer.WSID) error {
			for i := 0; i < n; i++ {
				_, ok, err := s.Start(kind, ws(i))
				if err != nil {
					return err
				}
				if !ok {
					ctx, cancel := context.WithTimeout(context.Background(), notNowFor)
					_, err = s.StartWithin(ctx, kind, ws(i))
					cancel()
					if err != nil {
						return err
					}
				}
				for _, q := range seqs {
					if _, err := s.Next(q); err != nil {
						return err
					}
				}
				if err := s.Flush(); err != nil {
					return err
				}
			}
			return nil
		}
	case paths[1]:
		var out []sequencer.Number
		return func(n int, ws func(int) sequencer.WSID) error {
			for i := 0; i < n; i++ {
				var since time.Time
				for {
					_, ok, numbers, err := s.FlushStartNext(kind, ws(i), seqs, out)
					if err != nil && i == 0 {
						_, ok, numbers, err = s.StartNext(kind, ws(i), seqs, out)
					}
					if err != nil {
						return err
					}
					out = numbers
					if ok {
						break
					}
					if err := stalled(&since); err != nil {
						return err
					}
				}
			}
			return s.Flush()
		}
	default:
		var out []sequencer.Number
		wss := make([]sequencer.WSID, 0, batch)
		return func(n int, ws func(int) sequencer.WSID) error {
			first := true
			var since time.Time
			for i := 0; i < n; {
				wss = wss[:0]
				for j := i; j < n && len(wss) < batch; j++ {
					wss = append(wss, ws(j))
				}
				var b sequencer.Batch
				var err error
				if first {
					b, err = s.StartBatch(kind, wss, seqs, out)
				} else {
					b, err = s.FlushStartBatch(kind, wss, seqs, out)
				}
				if err != nil {
					return err
				}
				first, out = false, b.Numbers
				if b.Started == 0 {
					if err := stalled(&since); err != nil {
						return err
					}
				} else {
					since = time.Time{}
				}
				i += b.Started
			}
			return s.Flush()
		}
	}
}

// emptyCall times instance#status on a bare instance: the wazero boundary alone.
func emptyCall(calls int) (float64, error) {
	inst, err := guest.New(nopHost{})
	if err != nil {
		return 0, err
	}
	defer inst.Close()
	p := guest.Params{Kinds: []guest.KindSequences{{Kind: 1, Sequences: [][2]uint64{{1, 1}}}}, MaxUnflushedValues: 500,
		LRUCacheSize: 1000, BatcherDelayNs: 5e6, RetryDelayNs: 5e8, MaxRetryDelayNs: 5e8}
	if err := inst.Create(&p); err != nil {
		return 0, err
	}
	t := time.Now()
	for i := 0; i < calls; i++ {
		if _, err := inst.Status(); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t).Nanoseconds()) / float64(calls), nil
}

type nopHost struct{}

func (nopHost) ReadNumbers(uint64, []uint16, []uint64) error       { return nil }
func (nopHost) ReadNumbersMany([]uint64, []uint16, []uint64) error { return nil }
func (nopHost) BeginReadNextOffset(uint64)                         {}
func (nopHost) BeginWrite(uint64, []uint64, uint64)                {}
func (nopHost) BeginReadPlog(uint64, uint64)                       {}
func (nopHost) Now() uint64                                        { return 0 }
func (nopHost) SetWake(uint64, bool)                               {}
func (nopHost) StatusChanged(guest.Status)                         {}
func (nopHost) String() string                                     { return fmt.Sprint("nop") }
