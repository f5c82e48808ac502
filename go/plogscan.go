package sequencer

import (
	"context"
	"fmt"
	"time"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// plogScan maps the plugin's paged reads (begin-read-plog from an offset, a page at a time)
// onto Storage.ActualizeSequencesFromPLog, a push scan with a callback per event: one scan runs
// on its goroutine, its events wait in a channel, and each read takes up to a page of them. A
// read from the offset the scan has reached goes on with it; a read from any other offset
// cancels it (through its ctx) and starts another from there.
type plogScan struct {
	cancel context.CancelFunc
	events chan scanEvent
	// err is the scan's result, set before events is closed.
	err error
	// pos is where the scan goes on: the offset after the last event taken.
	pos  uint64
	exit chan struct{}
}

type scanEvent struct {
	offset uint64
	values []SeqValue
}

// scanExitWait bounds how long a cancelled scan may take to return (a storage that ignores its
// ctx and the batcher's error is not waited for longer).
const scanExitWait = 10 * time.Second

func (t *tasks) startScan(first uint64) *plogScan {
	ctx, cancel := context.WithCancel(t.ctx)
	sc := &plogScan{cancel: cancel, events: make(chan scanEvent, 256), pos: first, exit: make(chan struct{})}
	storage := t.s.storage
	go func() {
		defer close(sc.exit)
		defer close(sc.events)
		defer func() {
			if p := recover(); p != nil {
				sc.err = fmt.Errorf("panic: %v", p)
			}
		}()
		sc.err = storage.ActualizeSequencesFromPLog(ctx, PLogOffset(first),
			func(ctx context.Context, batch []SeqValue, offset PLogOffset) error {
				ev := scanEvent{offset: uint64(offset), values: append([]SeqValue(nil), batch...)}
				select {
				case sc.events <- ev:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
	}()
	return sc
}

// endScan cancels the scan, if one runs, and waits (a bounded time) for it to return.
func (t *tasks) endScan() {
	if t.scan == nil {
		return
	}
	t.scan.cancel()
	select {
	case <-t.scan.exit:
	case <-time.After(scanExitWait):
	}
	t.scan = nil
}

// readPage answers begin-read-plog(first): up to a page of events from first on, as
// deliver-plog-words' flat words.
func (t *tasks) readPage(first uint64) *guest.Outcome {
	if t.scan != nil && t.scan.pos != first {
		t.endScan()
	}
	if t.scan == nil {
		t.scan = t.startScan(first)
	}
	sc := t.scan
	words := t.page[:0]
	next := first
	for n := 0; n < t.o.pageEvents; {
		select {
		case <-t.ctx.Done():
			return failed("ActualizeSequencesFromPLog", t.ctx.Err())
		case ev, ok := <-sc.events:
			if !ok {
				t.scan = nil
				sc.cancel()
				if sc.err != nil {
					return failed("ActualizeSequencesFromPLog", sc.err)
				}
				t.page = words
				return &guest.Outcome{Kind: guest.OutcomePlogPage, Words: words, Next: next, End: true}
			}
			if ev.offset < first {
				continue
			}
			for _, v := range ev.values {
				words = append(words, ev.offset, uint64(v.Key.WSID), uint64(v.Key.SeqID), uint64(v.Value))
			}
			next = ev.offset + 1
			n++
		}
	}
	sc.pos = next
	t.page = words
	return &guest.Outcome{Kind: guest.OutcomePlogPage, Words: words, Next: next, End: false}
}
