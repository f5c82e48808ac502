package filestore

import (
	"os"
	"path/filepath"
	"testing"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
)

func v(ws sequencer.WSID, seq sequencer.SeqID, n sequencer.Number) sequencer.SeqValue {
	return sequencer.SeqValue{Key: sequencer.NumberKey{WSID: ws, SeqID: seq}, Value: n}
}

func TestWhatWasAcknowledgedIsThereAfterReopeningAndATornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for o := sequencer.PLogOffset(1); o <= 3; o++ {
		if err := s.AppendEvent(o, []sequencer.SeqValue{v(1, 1, sequencer.Number(o))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendEvent(5, nil); err == nil {
		t.Fatal("an append that leaves a gap was accepted")
	}
	if err := s.WriteValuesAndNextPLogOffset([]sequencer.SeqValue{v(1, 1, 3)}, 3); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	// A crash mid-append: half a record at each file's end.
	for _, name := range []string{"plog", "view"} {
		f, _ := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		_, _ = f.Write([]byte{40, 0, 0, 0, 1, 2, 3})
		_ = f.Close()
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := s.NextPLogOffset(); n != 4 {
		t.Fatalf("next PLog offset %d, want 4", n)
	}
	if next, _ := s.ReadNextPLogOffset(); next != 3 || s.Number(1, 1) != 3 {
		t.Fatalf("stored offset %d, number %d; want 3, 3", next, s.Number(1, 1))
	}
	if err := s.AppendEvent(4, nil); err != nil {
		t.Fatalf("an append after the cut tail: %v", err)
	}
}
