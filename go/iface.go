package sequencer

// ISequencer is the original's isequencer.ISequencer with errors where it panics: the
// transaction calls a command processor depends on (Sequencer implements it), so it can be
// mocked or swapped.
type ISequencer interface {
	// Start begins a transaction: its PLog offset, true; false while "not now".
	Start(wsKind WSKind, wsID WSID) (PLogOffset, bool, error)
	// Next is the next number of a sequence in the transaction.
	Next(seqID SeqID) (Number, error)
	// Flush completes the transaction: its event is in the PLog.
	Flush() error
	// Actualize drops the transaction and recovers from the storage and the PLog.
	Actualize() error
}

var _ ISequencer = (*Sequencer)(nil)
