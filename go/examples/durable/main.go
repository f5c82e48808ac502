// Command durable numbers events durably in a directory and resumes after a restart: each run
// numbers -events more events (a command processor's cycle: Start, Next, append the event to
// the PLog file with fsync, Flush), and a run after a crash or a kill goes on from the PLog's
// last event, with no gap in the offsets and no number twice.
//
//	go run ./examples/durable -dir /tmp/seq-demo -events 5   # offsets 1..5
//	go run ./examples/durable -dir /tmp/seq-demo -events 5   # offsets 6..10
//
// The storage is the package's test store (internal/filestore: two append-only files with
// checksummed records); a real deployment brings its own sequencer.Storage.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
	"github.com/plog-sequencer/plog-sequencer/go/internal/filestore"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "plog-sequencer-durable"), "the store's directory")
	events := flag.Int("events", 5, "events to number in this run")
	ws := flag.Uint64("ws", 1000, "the workspace")
	flag.Parse()
	if err := run(*dir, *events, sequencer.WSID(*ws)); err != nil {
		log.Fatal(err)
	}
}

func run(dir string, events int, ws sequencer.WSID) error {
	store, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	defer store.Close()
	params := sequencer.Params{SeqTypes: map[sequencer.WSKind]map[sequencer.SeqID]sequencer.Number{
		1: {1: 1, 2: 1000}, // kind 1: sequence 1 from 1, sequence 2 from 1000
	}}
	seq, err := sequencer.New(params, store)
	if err != nil {
		return err
	}
	defer seq.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < events; i++ {
		// Waits out "not now": the recovery from the PLog file first, or too many values
		// waiting to be written.
		offset, err := seq.StartWithin(ctx, 1, ws)
		if err != nil {
			return err
		}
		a, err := seq.Next(1)
		if err != nil {
			return err
		}
		b, err := seq.Next(2)
		if err != nil {
			return err
		}
		key := func(s sequencer.SeqID) sequencer.NumberKey { return sequencer.NumberKey{WSID: ws, SeqID: s} }
		// The event is durable (fsynced) before Flush says so.
		if err := store.AppendEvent(offset, []sequencer.SeqValue{{Key: key(1), Value: a}, {Key: key(2), Value: b}}); err != nil {
			_ = seq.Actualize() // the command failed: its numbers are handed out again
			return err
		}
		if err := seq.Flush(); err != nil {
			return err
		}
		fmt.Printf("event at PLog offset %d: sequence 1 = %d, sequence 2 = %d\n", offset, a, b)
	}
	if err := seq.WaitFlushed(ctx); err != nil { // the view written before exiting (optional)
		return err
	}
	stored, _ := store.ReadNextPLogOffset()
	fmt.Printf("%s: PLog up to offset %d, view written up to offset %d\n", dir, store.NextPLogOffset()-1, stored)
	return nil
}
