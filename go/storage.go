package sequencer

import "context"

// Storage is one partition's storage: the sequences view, the stored PLog offset and the PLog.
// It has the shape of the original's isequencer.ISeqStorage, so an implementation of that
// serves as it is. The sequencer calls ReadNumbers inside its calls (Start, StartBatch) and the
// other methods from its own goroutine, one at a time; they may block.
type Storage interface {
	// ReadNumbers returns the stored last numbers of seqs in ws, in that order, 0 for a key
	// never stored. An error refuses the Start that asked (ErrStorage).
	ReadNumbers(ws WSID, seqs []SeqID) ([]Number, error)

	// WriteValuesAndNextPLogOffset stores batch (keys unique; it may be empty), then offset as
	// the stored PLog offset: the values must be durable before the offset is. The sequencer
	// keeps no reference to batch after the call.
	WriteValuesAndNextPLogOffset(batch []SeqValue, offset PLogOffset) error

	// ReadNextPLogOffset returns the offset the last WriteValuesAndNextPLogOffset stored (0 if
	// none).
	ReadNextPLogOffset() (PLogOffset, error)

	// ActualizeSequencesFromPLog calls batcher once per PLog event from offset on (offset
	// included), in offset order, with the event's values and its offset, until the PLog ends
	// (then it returns nil), batcher returns an error, or ctx is done (then it returns
	// ctx.Err()). The sequencer copies batch before batcher returns.
	ActualizeSequencesFromPLog(ctx context.Context, offset PLogOffset,
		batcher func(ctx context.Context, batch []SeqValue, offset PLogOffset) error) error
}

// ISeqStorage is Storage under the original's name.
type ISeqStorage = Storage

// NumbersManyReader is an optional interface of a Storage that reads many workspaces' numbers
// in one go (StartBatch's cold workspaces): len(seqs) numbers per workspace, workspace after
// workspace. Without it the sequencer calls ReadNumbers per workspace.
type NumbersManyReader interface {
	ReadNumbersMany(ws []WSID, seqs []SeqID) ([]Number, error)
}
