package sequencer

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// MemoryStorage is a Storage in memory, for tests and examples: the view, the stored PLog
// offset and the PLog. Safe for concurrent use.
type MemoryStorage struct {
	mu      sync.Mutex
	numbers map[NumberKey]Number
	next    PLogOffset
	events  []memEvent // in offset order
	writes  int
}

type memEvent struct {
	offset PLogOffset
	values []SeqValue
}

// NewMemoryStorage is an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{numbers: map[NumberKey]Number{}}
}

// AppendEvent appends an event with its sequence values at offset, as the command processor
// does; offset must be after the PLog's last event.
func (m *MemoryStorage) AppendEvent(offset PLogOffset, values []SeqValue) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.events); n > 0 && m.events[n-1].offset >= offset {
		return fmt.Errorf("append at %d: the PLog's last event is at %d", offset, m.events[n-1].offset)
	}
	m.events = append(m.events, memEvent{offset: offset, values: append([]SeqValue(nil), values...)})
	return nil
}

// SetNumber stores a number in the view, as if written earlier.
func (m *MemoryStorage) SetNumber(ws WSID, seq SeqID, n Number) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.numbers[NumberKey{WSID: ws, SeqID: seq}] = n
}

// Number is the view's last number of ws's sequence seq (0 if none).
func (m *MemoryStorage) Number(ws WSID, seq SeqID) Number {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.numbers[NumberKey{WSID: ws, SeqID: seq}]
}

// Writes counts the writes applied.
func (m *MemoryStorage) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// ReadNumbers implements Storage.
func (m *MemoryStorage) ReadNumbers(ws WSID, seqs []SeqID) ([]Number, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Number, len(seqs))
	for k, s := range seqs {
		out[k] = m.numbers[NumberKey{WSID: ws, SeqID: s}]
	}
	return out, nil
}

// WriteValuesAndNextPLogOffset implements Storage.
func (m *MemoryStorage) WriteValuesAndNextPLogOffset(batch []SeqValue, offset PLogOffset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range batch {
		m.numbers[v.Key] = v.Value
	}
	m.next = offset
	m.writes++
	return nil
}

// ReadNextPLogOffset implements Storage.
func (m *MemoryStorage) ReadNextPLogOffset() (PLogOffset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next, nil
}

// ActualizeSequencesFromPLog implements Storage.
func (m *MemoryStorage) ActualizeSequencesFromPLog(ctx context.Context, offset PLogOffset,
	batcher func(ctx context.Context, batch []SeqValue, offset PLogOffset) error) error {
	m.mu.Lock()
	i := sort.Search(len(m.events), func(i int) bool { return m.events[i].offset >= offset })
	events := append([]memEvent(nil), m.events[i:]...)
	m.mu.Unlock()
	for _, e := range events {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := batcher(ctx, e.values, e.offset); err != nil {
			return err
		}
	}
	return nil
}
