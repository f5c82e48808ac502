// Package sequencer numbers events for an event-sourced command processor: dense, monotonic
// PLog offsets and sequence numbers per workspace, recovered from the partition log (PLog)
// after a failure, so that a number that reached the PLog is never handed out again.
//
// It hosts the plog-sequencer plugin's core module (embedded; no cgo, no file to ship) on
// wazero: every sequencing rule is the plugin's Rust core, and this package converts types
// and drives the background work (the flusher's writes, the actualizer's reads) on a goroutine
// of its own.
//
// # From the original isequencer
//
// The API follows voedger's pkg/isequencer, so a command processor can switch:
//
//	isequencer                          this package
//	Params{SeqTypes, MaxNum..., LRU..}  Params (same fields, plus the retry delays)
//	ISeqStorage                         Storage (the same four methods; ISeqStorage is an alias)
//	New(params, storage, iTime)         New(params, storage, opts...) (*Sequencer, error)
//	cleanup()                           (*Sequencer).Close()
//	Start(kind, ws) (offset, ok)        Start(kind, ws) (offset, ok, err)
//	Next(seq) (num, err)                Next(seq) (num, err)
//	Flush()                             Flush() error
//	Actualize()                         Actualize() error
//
// Where the original panics on misuse this package returns an error and changes nothing: a
// second Start is ErrTransactionInProgress, Next or Flush without Start ErrNoTransaction,
// Actualize while actualizing ErrAlreadyActualizing, any call after Close ErrClosed. Each is an
// *Error whose Code mirrors the WIT `error` case; errors.Is matches it against the sentinels.
// Call sites that ignore Flush's and Actualize's results still compile. StartWithin waits out
// "not now" until a context is done.
//
// A trap in the plugin (a bug of the plugin, or a Storage method that panicked inside a call)
// is returned as a *TrapError (errors.Is(err, ErrTrapped)): the instance is dropped and a new
// one made over the same storage, which actualizes from the PLog, so the next call works
// (after "not now" while it recovers) and no number is handed out twice.
//
// # Faster paths
//
// Start, Next and Flush make one call into the plugin per transaction (numbers ahead:
// docs/PLUGIN.md). FlushStartNext makes one per event, FlushStartBatch one per batch of events.
// Events is the facade for command processors (StartEvent, NextRecID, NextCRecID, FinishEvent,
// CancelEvent, Status) over SystemParams.
//
// # Background work
//
// A sequencer's goroutine performs the storage work the plugin begins, one operation at a time
// in the order begun (writes in order, a write's values before its offset), and wakes the
// plugin when it asks (retries back off, doubling up to Params.MaxRetryDelay). The storage's
// PLog scan (ActualizeSequencesFromPLog) is read a page at a time and cancelled through its
// ctx when the plugin asks from another offset or the sequencer closes. Close stops it all; a
// write in flight lands first.
package sequencer
