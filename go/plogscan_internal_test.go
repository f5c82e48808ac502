package sequencer

import (
	"context"
	"sync"
	"testing"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

type scanCounter struct {
	*MemoryStorage
	mu    sync.Mutex
	scans []PLogOffset
}

func (c *scanCounter) ActualizeSequencesFromPLog(ctx context.Context, offset PLogOffset,
	batcher func(ctx context.Context, batch []SeqValue, offset PLogOffset) error) error {
	c.mu.Lock()
	c.scans = append(c.scans, offset)
	c.mu.Unlock()
	return c.MemoryStorage.ActualizeSequencesFromPLog(ctx, offset, batcher)
}

func pageOffsets(t *testing.T, o *guest.Outcome) (first, last uint64) {
	t.Helper()
	if o.Kind != guest.OutcomePlogPage || len(o.Words) == 0 {
		t.Fatalf("not a page with values: %+v", o)
	}
	return o.Words[0], o.Words[len(o.Words)-4]
}

// A read from where the scan stands goes on with it; a read from anywhere else restarts it
// from there; the last page says the PLog ends.
func TestPagedReadsContinueTheScanOrRestartItAtAnotherOffset(t *testing.T) {
	st := &scanCounter{MemoryStorage: NewMemoryStorage()}
	for o := PLogOffset(1); o <= 20; o++ {
		_ = st.AppendEvent(o, []SeqValue{{Key: NumberKey{WSID: WSID(o), SeqID: 1}, Value: Number(o)}})
	}
	tk := newTasks(&Sequencer{storage: st}, options{pageEvents: 7})
	defer tk.cancel()
	defer tk.endScan()
	p := tk.readPage(1)
	if f, l := pageOffsets(t, p); f != 1 || l != 7 || p.Next != 8 || p.End {
		t.Fatalf("first page %d..%d next %d end %v", f, l, p.Next, p.End)
	}
	p = tk.readPage(8)
	if f, l := pageOffsets(t, p); f != 8 || l != 14 || len(st.scans) != 1 {
		t.Fatalf("second page %d..%d after scans %v, want 8..14 from one scan", f, l, st.scans)
	}
	p = tk.readPage(3)
	if f, l := pageOffsets(t, p); f != 3 || l != 9 || len(st.scans) != 2 || st.scans[1] != 3 {
		t.Fatalf("a read from 3 gave %d..%d after scans %v, want 3..9 from a new scan at 3", f, l, st.scans)
	}
	p = tk.readPage(10)
	p = tk.readPage(p.Next)
	if f, l := pageOffsets(t, p); f != 17 || l != 20 || p.Next != 21 || !p.End {
		t.Fatalf("last page %d..%d next %d end %v, want 17..20 next 21 end", f, l, p.Next, p.End)
	}
	if p = tk.readPage(21); p.Kind != guest.OutcomePlogPage || len(p.Words) != 0 || p.Next != 21 || !p.End {
		t.Fatalf("a read past the end: %+v", p)
	}
}
