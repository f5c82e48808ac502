package guest

import "fmt"

// Status is the WIT `status`.
type Status uint8

// The WIT `status` cases, in WIT order.
const (
	Actualizing Status = iota
	Ready
	InTransaction
	CleanedUp
)

var statusNames = [...]string{"actualizing", "ready", "in-transaction", "cleaned-up"}

// String is the status's WIT name.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// NotNowReason is the WIT `not-now-reason`.
type NotNowReason uint8

// The WIT `not-now-reason` cases.
const (
	NotNowActualizing NotNowReason = iota
	NotNowTooManyUnflushed
)

// String is the reason's WIT name.
func (r NotNowReason) String() string {
	switch r {
	case NotNowActualizing:
		return "actualizing"
	case NotNowTooManyUnflushed:
		return "too-many-unflushed"
	}
	return fmt.Sprintf("not-now-reason(%d)", uint8(r))
}

// Start is a `start-outcome`: Started with Offset, or not (Reason says why).
type Start struct {
	Started bool
	Offset  uint64
	Reason  NotNowReason
}

// ErrorCase is a case of the WIT `error` (and `refusal`), in WIT order.
type ErrorCase uint8

// The WIT `error` cases.
const (
	InvalidParams ErrorCase = iota
	ErrCleanedUp
	TransactionInProgress
	NoTransaction
	UnknownWSKind
	UnknownSeqID
	AlreadyActualizing
	SequenceExhausted
	UnknownOperation
	WrongOutcome
	MalformedNumbers
	MalformedPlogPage
	StorageFailed
)

var caseNames = [...]string{"invalid-params", "cleaned-up", "transaction-in-progress", "no-transaction",
	"unknown-ws-kind", "unknown-seq-id", "already-actualizing", "sequence-exhausted", "unknown-operation",
	"wrong-outcome", "malformed-numbers", "malformed-plog-page", "storage"}

// String is the case's WIT name (kebab-case).
func (c ErrorCase) String() string {
	if int(c) < len(caseNames) {
		return caseNames[c]
	}
	return fmt.Sprintf("error(%d)", uint8(c))
}

// Refusal is a refused call: the WIT `error` with its payload.
type Refusal struct {
	Case ErrorCase
	// Text: invalid-params, malformed-numbers, malformed-plog-page, storage.
	Text string
	// Kind: unknown-ws-kind, unknown-seq-id, sequence-exhausted; Seq: the last two.
	Kind, Seq uint16
	// Op: unknown-operation, wrong-outcome.
	Op uint64
}

// Error says the case and its payload.
func (r *Refusal) Error() string {
	switch r.Case {
	case InvalidParams, MalformedNumbers, MalformedPlogPage, StorageFailed:
		return fmt.Sprintf("%s: %s", r.Case, r.Text)
	case UnknownWSKind:
		return fmt.Sprintf("%s: kind %d", r.Case, r.Kind)
	case UnknownSeqID, SequenceExhausted:
		return fmt.Sprintf("%s: kind %d sequence %d", r.Case, r.Kind, r.Seq)
	case UnknownOperation, WrongOutcome:
		return fmt.Sprintf("%s: operation %d", r.Case, r.Op)
	}
	return r.Case.String()
}

// HeldNumbers is the WIT `held-numbers`.
type HeldNumbers struct {
	Cached, Unflushed, Transaction uint32
}

// Quad is a `seq-quad`: the first Count of Seqs.
type Quad struct {
	Count uint8
	Seqs  [4]uint16
}

// QuadOf is the quad naming seqs (at most four; ok false for more).
func QuadOf(seqs []uint16) (q Quad, ok bool) {
	if len(seqs) > 4 {
		return q, false
	}
	q.Count = uint8(len(seqs))
	copy(q.Seqs[:], seqs)
	return q, true
}

// Ahead is `ahead-numbers` (and `event-ahead`: Start, WLog in Offset2): the start's outcome,
// the status after it, and the numbers ahead.
type Ahead struct {
	Start   Start
	Status  Status
	WLog    uint64
	Numbers [4]uint64
}

// Batch is `batch-numbers`.
type Batch struct {
	FirstOffset uint64
	Started     uint32
	NotNow      bool
	Reason      NotNowReason
	// Numbers is seqs.count numbers per started event; it is the caller's buffer, reused.
	Numbers []uint64
}

// KindSequences is one kind of `params`: its sequences and their first numbers, in order.
type KindSequences struct {
	Kind      uint16
	Sequences [][2]uint64
}

// Params is the WIT `params`.
type Params struct {
	Kinds                                         []KindSequences
	MaxUnflushedValues, LRUCacheSize              uint32
	BatcherDelayNs, RetryDelayNs, MaxRetryDelayNs uint64
	RetryJitterPercent                            uint8
}

// Outcome is a storage outcome to deliver: exactly one of its kinds.
type Outcome struct {
	Kind OutcomeKind
	// NextOffset for OutcomeNextOffset.
	NextOffset uint64
	// Words (four per value: offset, ws, seq, value), Next and End for OutcomePlogPage.
	Words []uint64
	Next  uint64
	End   bool
	// Message for OutcomeFailed.
	Message string
}

// OutcomeKind is the case of the WIT `outcome`.
type OutcomeKind uint8

// The WIT `outcome` cases.
const (
	OutcomeWritten OutcomeKind = iota
	OutcomeNextOffset
	OutcomePlogPage
	OutcomeFailed
)
