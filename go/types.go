package sequencer

import (
	"time"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// SeqID names a sequence of a workspace kind (the original's isequencer.SeqID).
type SeqID uint16

// WSKind is a workspace kind.
type WSKind uint16

// WSID is a workspace.
type WSID uint64

// Number is a number a sequence hands out.
type Number uint64

// PLogOffset is an event's offset in the partition log.
type PLogOffset uint64

// NumberKey is one sequence of one workspace.
type NumberKey struct {
	WSID  WSID
	SeqID SeqID
}

// SeqValue is the last number of one key.
type SeqValue struct {
	Key   NumberKey
	Value Number
}

// Defaults of Params' zero fields.
const (
	DefaultMaxNumUnflushedValues             = 500
	DefaultLRUCacheSize                      = 100_000
	DefaultBatcherDelayOnToBeFlushedOverflow = 5 * time.Millisecond
	DefaultRetryDelay                        = 500 * time.Millisecond
	DefaultMaxRetryDelay                     = 10 * time.Second
)

// Params configure a sequencer. The first four fields are the original's; a zero field takes
// its default. The sequencer checks them at New (docs/DESIGN.md §3.7).
type Params struct {
	// SeqTypes are the sequences of each workspace kind and the first number each hands out
	// (at least 1). Only these are managed (ErrUnknownSeqID, ErrUnknownWSKind).
	SeqTypes map[WSKind]map[SeqID]Number

	// MaxNumUnflushedValues: above this many unwritten values Start says "not now" (500).
	MaxNumUnflushedValues int
	// LRUCacheSize is how many numbers the cache keeps (100,000).
	LRUCacheSize int
	// BatcherDelayOnToBeFlushedOverflow: while replay is held back by unwritten values, how
	// often to look again (5 ms).
	BatcherDelayOnToBeFlushedOverflow time.Duration

	// RetryDelay is the wait after a storage operation's first failure (500 ms).
	RetryDelay time.Duration
	// MaxRetryDelay caps the wait, which doubles with each further failure (10 s; the
	// original waits a constant 500 ms: set it to RetryDelay for that).
	MaxRetryDelay time.Duration
	// RetryJitterPercent draws that share of each wait away at random (0..100; 0: exact
	// waits, as the original's).
	RetryJitterPercent uint8
}

// Status is what the sequencer is doing.
type Status uint8

// The statuses.
const (
	StatusActualizing   Status = Status(guest.Actualizing)
	StatusReady         Status = Status(guest.Ready)
	StatusInTransaction Status = Status(guest.InTransaction)
	StatusCleanedUp     Status = Status(guest.CleanedUp)
)

// String is the status's WIT name (actualizing, ready, in-transaction, cleaned-up).
func (s Status) String() string { return guest.Status(s).String() }

// HeldNumbers counts the numbers a sequencer holds in memory, by where.
type HeldNumbers struct {
	Cached, Unflushed, Transaction uint32
}

// NotNowReason says why a start said "not now".
type NotNowReason uint8

// The reasons.
const (
	NotNowActualizing      NotNowReason = NotNowReason(guest.NotNowActualizing)
	NotNowTooManyUnflushed NotNowReason = NotNowReason(guest.NotNowTooManyUnflushed)
)

// String is the reason's WIT name.
func (r NotNowReason) String() string { return guest.NotNowReason(r).String() }

// Batch is what StartBatch numbered: Started events from FirstOffset on (one offset each), and
// len(seqs) numbers per event, event after event.
type Batch struct {
	FirstOffset PLogOffset
	Started     int
	// NotNow: the event after the started ones was not started, for Reason.
	NotNow bool
	Reason NotNowReason
	// Numbers is len(seqs) numbers per started event, in the order asked.
	Numbers []Number
}
