// Package filestore is a durable Storage in two append-only files of one directory, for the
// package's tests and examples: `plog` holds the events the command processor appends, `view`
// holds the sequencer's writes (each write's values and its offset in one record, so the
// offset is never durable without the values). Every append is fsynced before it is
// acknowledged. A record is checksummed; a torn record at a file's end (a crash mid-append) is
// cut off when the store opens. The whole store is also kept in memory.
package filestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

// Store is the durable storage of one partition. Safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	plog   *os.File
	view   *os.File
	events []Event
	last   map[sequencer.NumberKey]sequencer.Number
	next   sequencer.PLogOffset
}

// Event is one PLog event.
type Event struct {
	Offset sequencer.PLogOffset
	Values []sequencer.SeqValue
}

var _ sequencer.Storage = (*Store)(nil)

// Open opens (or creates) the store in dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Store{last: map[sequencer.NumberKey]sequencer.Number{}}
	var err error
	if s.plog, err = openLog(filepath.Join(dir, "plog"), func(r []byte) error {
		e, err := decodeEvent(r)
		if err == nil {
			s.events = append(s.events, e)
		}
		return err
	}); err != nil {
		return nil, err
	}
	if s.view, err = openLog(filepath.Join(dir, "view"), func(r []byte) error {
		values, next, err := decodeWrite(r)
		for _, v := range values {
			s.last[v.Key] = v.Value
		}
		s.next = next
		return err
	}); err != nil {
		s.plog.Close()
		return nil, err
	}
	return s, syncDir(dir)
}

// Close closes the files.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.plog.Close(), s.view.Close())
}

// Events are the PLog's events, in offset order.
func (s *Store) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Number is the view's last number of a key (0 if none).
func (s *Store) Number(ws sequencer.WSID, seq sequencer.SeqID) sequencer.Number {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[sequencer.NumberKey{WSID: ws, SeqID: seq}]
}

// NextPLogOffset is the PLog's next offset: after its last event, 1 if empty.
func (s *Store) NextPLogOffset() sequencer.PLogOffset {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) == 0 {
		return 1
	}
	return s.events[len(s.events)-1].Offset + 1
}

// AppendEvent appends an event at offset, durably: offset must be the PLog's next.
func (s *Store) AppendEvent(offset sequencer.PLogOffset, values []sequencer.SeqValue) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := sequencer.PLogOffset(1)
	if n := len(s.events); n > 0 {
		want = s.events[n-1].Offset + 1
	}
	if offset != want {
		return fmt.Errorf("append at %d: the PLog's next offset is %d", offset, want)
	}
	if err := appendRecord(s.plog, encodeEvent(offset, values)); err != nil {
		return err
	}
	s.events = append(s.events, Event{Offset: offset, Values: append([]sequencer.SeqValue(nil), values...)})
	return nil
}

// ReadNumbers implements sequencer.Storage.
func (s *Store) ReadNumbers(ws sequencer.WSID, seqs []sequencer.SeqID) ([]sequencer.Number, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sequencer.Number, len(seqs))
	for i, q := range seqs {
		out[i] = s.last[sequencer.NumberKey{WSID: ws, SeqID: q}]
	}
	return out, nil
}

// WriteValuesAndNextPLogOffset implements sequencer.Storage: one record, fsynced.
func (s *Store) WriteValuesAndNextPLogOffset(batch []sequencer.SeqValue, offset sequencer.PLogOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := appendRecord(s.view, encodeWrite(batch, offset)); err != nil {
		return err
	}
	for _, v := range batch {
		s.last[v.Key] = v.Value
	}
	s.next = offset
	return nil
}

// ReadNextPLogOffset implements sequencer.Storage.
func (s *Store) ReadNextPLogOffset() (sequencer.PLogOffset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next, nil
}

// ActualizeSequencesFromPLog implements sequencer.Storage.
func (s *Store) ActualizeSequencesFromPLog(ctx context.Context, offset sequencer.PLogOffset,
	batcher func(ctx context.Context, batch []sequencer.SeqValue, offset sequencer.PLogOffset) error) error {
	s.mu.Lock()
	i := sort.Search(len(s.events), func(i int) bool { return s.events[i].Offset >= offset })
	events := append([]Event(nil), s.events[i:]...)
	s.mu.Unlock()
	for _, e := range events {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := batcher(ctx, e.Values, e.Offset); err != nil {
			return err
		}
	}
	return nil
}

// A record is its length (u32), its body and the body's CRC-32 (u32), little-endian.

func appendRecord(f *os.File, body []byte) error {
	rec := make([]byte, 0, len(body)+8)
	rec = binary.LittleEndian.AppendUint32(rec, uint32(len(body)))
	rec = append(rec, body...)
	rec = binary.LittleEndian.AppendUint32(rec, crc32.ChecksumIEEE(body))
	if _, err := f.Write(rec); err != nil {
		return err
	}
	return f.Sync()
}

// openLog reads every whole record of the file at path (creating it), cuts off a torn tail,
// and returns the file positioned for appends.
func openLog(path string, record func([]byte) error) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	good := 0
	for len(data)-good >= 8 {
		n := int(binary.LittleEndian.Uint32(data[good:]))
		if n > len(data)-good-8 {
			break
		}
		body := data[good+4 : good+4+n]
		if binary.LittleEndian.Uint32(data[good+4+n:]) != crc32.ChecksumIEEE(body) {
			break
		}
		if err := record(body); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		good += 8 + n
	}
	if good < len(data) {
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// A value is 18 bytes: workspace u64, sequence u16, number u64.

func appendValues(b []byte, values []sequencer.SeqValue) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(values)))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint64(b, uint64(v.Key.WSID))
		b = binary.LittleEndian.AppendUint16(b, uint16(v.Key.SeqID))
		b = binary.LittleEndian.AppendUint64(b, uint64(v.Value))
	}
	return b
}

func readValues(b []byte) ([]sequencer.SeqValue, []byte, error) {
	if len(b) < 4 {
		return nil, nil, errors.New("a record too short for its values")
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if len(b) < 18*n {
		return nil, nil, errors.New("a record too short for its values")
	}
	values := make([]sequencer.SeqValue, n)
	for i := range values {
		v := b[18*i:]
		values[i] = sequencer.SeqValue{
			Key:   sequencer.NumberKey{WSID: sequencer.WSID(binary.LittleEndian.Uint64(v)), SeqID: sequencer.SeqID(binary.LittleEndian.Uint16(v[8:]))},
			Value: sequencer.Number(binary.LittleEndian.Uint64(v[10:])),
		}
	}
	return values, b[18*n:], nil
}

func encodeEvent(offset sequencer.PLogOffset, values []sequencer.SeqValue) []byte {
	return appendValues(binary.LittleEndian.AppendUint64(nil, uint64(offset)), values)
}

func decodeEvent(b []byte) (Event, error) {
	if len(b) < 8 {
		return Event{}, errors.New("an event record too short")
	}
	values, _, err := readValues(b[8:])
	return Event{Offset: sequencer.PLogOffset(binary.LittleEndian.Uint64(b)), Values: values}, err
}

func encodeWrite(values []sequencer.SeqValue, next sequencer.PLogOffset) []byte {
	return binary.LittleEndian.AppendUint64(appendValues(nil, values), uint64(next))
}

func decodeWrite(b []byte) ([]sequencer.SeqValue, sequencer.PLogOffset, error) {
	values, rest, err := readValues(b)
	if err != nil || len(rest) < 8 {
		return nil, 0, errors.Join(err, errors.New("a write record without its offset"))
	}
	return values, sequencer.PLogOffset(binary.LittleEndian.Uint64(rest)), nil
}
