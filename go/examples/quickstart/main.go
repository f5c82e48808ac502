// Command quickstart numbers one event with the Go package: the PLog already holds event 42, so
// the event takes offset 43 and sequence 1's next number, 14. It prints "43 14 14" (the offset,
// the number, and the number as the flusher wrote it to the view).
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

func main() {
	storage := sequencer.NewMemoryStorage() // or any sequencer.Storage (isequencer.ISeqStorage's shape)
	key := sequencer.NumberKey{WSID: 1000, SeqID: 1}
	_ = storage.AppendEvent(42, []sequencer.SeqValue{{Key: key, Value: 13}}) // the PLog holds event 42
	params := sequencer.Params{SeqTypes: map[sequencer.WSKind]map[sequencer.SeqID]sequencer.Number{1: {1: 1}}}
	seq, err := sequencer.New(params, storage) // kind 1: sequence 1 from 1
	if err != nil {
		log.Fatal(err)
	}
	defer seq.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := seq.WaitReady(ctx); err != nil { // actualization: the stored offset, then the PLog
		log.Fatal(err)
	}
	offset, ok, err := seq.Start(1, 1000) // kind 1, workspace 1000
	if err != nil || !ok {
		log.Fatalf("not started: %v", err)
	}
	id, err := seq.Next(1)
	if err != nil {
		log.Fatal(err)
	}
	_ = storage.AppendEvent(offset, []sequencer.SeqValue{{Key: key, Value: id}}) // the command processor's event
	if err := seq.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := seq.WaitFlushed(ctx); err != nil { // the flusher writes 14, then offset 43
		log.Fatal(err)
	}
	fmt.Println(offset, id, storage.Number(1000, 1))
}
