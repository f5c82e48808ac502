package sequencer

import (
	"errors"
	"fmt"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// Code is the case of a refused call, mirroring the WIT `error` variant (wit/sequencer.wit).
type Code uint8

// The codes, in WIT order.
const (
	CodeInvalidParams         = Code(guest.InvalidParams)
	CodeCleanedUp             = Code(guest.ErrCleanedUp)
	CodeTransactionInProgress = Code(guest.TransactionInProgress)
	CodeNoTransaction         = Code(guest.NoTransaction)
	CodeUnknownWSKind         = Code(guest.UnknownWSKind)
	CodeUnknownSeqID          = Code(guest.UnknownSeqID)
	CodeAlreadyActualizing    = Code(guest.AlreadyActualizing)
	CodeSequenceExhausted     = Code(guest.SequenceExhausted)
	CodeUnknownOperation      = Code(guest.UnknownOperation)
	CodeWrongOutcome          = Code(guest.WrongOutcome)
	CodeMalformedNumbers      = Code(guest.MalformedNumbers)
	CodeMalformedPlogPage     = Code(guest.MalformedPlogPage)
	CodeStorage               = Code(guest.StorageFailed)
)

// String is the code's WIT name (kebab-case: "no-transaction", ...).
func (c Code) String() string { return guest.ErrorCase(c).String() }

// Error is a refused call: nothing changed (docs/DESIGN.md §3.6). errors.Is matches it against
// the sentinel of its code (ErrNoTransaction, ...), whatever its payload.
type Error struct {
	Code Code
	// Text explains CodeInvalidParams, CodeMalformedNumbers, CodeMalformedPlogPage, CodeStorage.
	Text string
	// Kind: CodeUnknownWSKind, CodeUnknownSeqID, CodeSequenceExhausted; Seq: the last two.
	Kind WSKind
	Seq  SeqID
	// Op: CodeUnknownOperation, CodeWrongOutcome.
	Op uint64
}

// Error says the code and its payload, as "sequencer: no-transaction".
func (e *Error) Error() string {
	r := guest.Refusal{Case: guest.ErrorCase(e.Code), Text: e.Text, Kind: uint16(e.Kind), Seq: uint16(e.Seq), Op: e.Op}
	return "sequencer: " + r.Error()
}

// Is reports whether target is an *Error of the same code (the sentinels are).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The sentinels, one per code: errors.Is(err, ErrNoTransaction).
var (
	ErrInvalidParams         = &Error{Code: CodeInvalidParams}
	ErrCleanedUp             = &Error{Code: CodeCleanedUp}
	ErrTransactionInProgress = &Error{Code: CodeTransactionInProgress}
	ErrNoTransaction         = &Error{Code: CodeNoTransaction}
	ErrUnknownWSKind         = &Error{Code: CodeUnknownWSKind}
	// ErrUnknownSeqID is the original's isequencer.ErrUnknownSeqID.
	ErrUnknownSeqID       = &Error{Code: CodeUnknownSeqID}
	ErrAlreadyActualizing = &Error{Code: CodeAlreadyActualizing}
	ErrSequenceExhausted  = &Error{Code: CodeSequenceExhausted}
	ErrUnknownOperation   = &Error{Code: CodeUnknownOperation}
	ErrWrongOutcome       = &Error{Code: CodeWrongOutcome}
	ErrMalformedNumbers   = &Error{Code: CodeMalformedNumbers}
	ErrMalformedPlogPage  = &Error{Code: CodeMalformedPlogPage}
	ErrStorage            = &Error{Code: CodeStorage}
	// ErrClosed is ErrCleanedUp: every call after Close is refused with it.
	ErrClosed = ErrCleanedUp
)

// ErrTrapped matches a call that trapped in the plugin (errors.Is). The instance was dropped
// and a new one created over the same storage, which actualizes from the PLog: the next call
// works (after "not now" while it actualizes), and no number is handed out twice. The
// transaction in progress, if any, is gone: treat it as failed.
var ErrTrapped = errors.New("sequencer: the plugin trapped")

// TrapError is a trap: its Unwrap gives wazero's error, and errors.Is(err, ErrTrapped) holds.
type TrapError struct {
	// Call is the plugin function that trapped.
	Call string
	// Cause is wazero's error.
	Cause error
	// Recreated is nil if a new instance was made at once, else why not (the next call
	// tries again).
	Recreated error
}

// Error says where the plugin trapped and why.
func (e *TrapError) Error() string {
	s := fmt.Sprintf("sequencer: the plugin trapped in %s: %v", e.Call, e.Cause)
	if e.Recreated != nil {
		s += fmt.Sprintf(" (a new instance could not be made yet: %v)", e.Recreated)
	}
	return s
}

// Unwrap gives the trap's cause (wazero's error) and ErrTrapped.
func (e *TrapError) Unwrap() []error { return []error{ErrTrapped, e.Cause} }

// errorOf converts internal/guest's errors to the package's.
func errorOf(err error) error {
	var r *guest.Refusal
	if errors.As(err, &r) {
		return &Error{Code: Code(r.Case), Text: r.Text, Kind: WSKind(r.Kind), Seq: SeqID(r.Seq), Op: r.Op}
	}
	return err
}
