package sequencer_test

import (
	"context"
	"fmt"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

// Numbers one event after event 42 of the PLog: its offset and a number of sequence 1.
func Example() {
	storage := sequencer.NewMemoryStorage() // or your Storage (isequencer.ISeqStorage's shape)
	_ = storage.AppendEvent(42, []sequencer.SeqValue{{Key: sequencer.NumberKey{WSID: 1000, SeqID: 1}, Value: 13}})
	params := sequencer.Params{SeqTypes: map[sequencer.WSKind]map[sequencer.SeqID]sequencer.Number{1: {1: 1}}}
	seq, err := sequencer.New(params, storage)
	if err != nil {
		panic(err)
	}
	defer seq.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = seq.WaitReady(ctx) // it actualizes from the PLog first
	offset, ok, err := seq.Start(1, 1000)
	if err != nil || !ok {
		panic(fmt.Sprint("not started: ", err))
	}
	id, _ := seq.Next(1)
	// The command processor appends its event to the PLog, durably, then flushes.
	_ = storage.AppendEvent(offset, []sequencer.SeqValue{{Key: sequencer.NumberKey{WSID: 1000, SeqID: 1}, Value: id}})
	_ = seq.Flush()
	_ = seq.WaitFlushed(ctx) // the flusher wrote 14 to the view
	fmt.Println(offset, id, storage.Number(1000, 1))
	// Output: 43 14 14
}
