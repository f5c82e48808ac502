package sequencer_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sequencer "github.com/plog-sequencer/plog-sequencer/go"
	"github.com/plog-sequencer/plog-sequencer/go/internal/filestore"
)

// childDirEnv makes the test binary a child that numbers events into the file store there
// until it is killed (see TestMain).
const childDirEnv = "PLOG_SEQUENCER_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		if err := numberUntilKilled(dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var durableParams = sequencer.Params{SeqTypes: kinds(1, 1, 2)}

// numberUntilKilled is a command processor: events in five workspaces, each taking numbers of
// sequences 1 and 2, appended durably to the PLog, then flushed; one in fifty fails after its
// numbers (Actualize) and never reaches the PLog. It prints the PLog's next offset as it goes.
func numberUntilKilled(dir string) error {
	store, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	s, err := sequencer.New(durableParams, store, sequencer.WithSettleAfter(50*time.Microsecond))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	for i := 0; ctx.Err() == nil; i++ {
		if err := s.WaitReady(ctx); err != nil {
			return err
		}
		ws := WSID(rng.Intn(5))
		o, ok, err := s.Start(1, ws)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		a, err := s.Next(1)
		if err != nil {
			return err
		}
		b, err := s.Next(2)
		if err != nil {
			return err
		}
		if rng.Intn(50) == 0 {
			if err := s.Actualize(); err != nil {
				return err
			}
			continue
		}
		if err := store.AppendEvent(o, []SeqValue{val(ws, 1, a), val(ws, 2, b)}); err != nil {
			return err
		}
		if err := s.Flush(); err != nil {
			return err
		}
		fmt.Println(o + 1)
	}
	return ctx.Err()
}

// A real child process numbers events durably and is SIGKILLed mid-run, again and again; after
// each restart the PLog's offsets stay dense and no number reaches it twice: each key's numbers
// in the PLog are 1, 2, 3, ... in offset order, and the view holds every event's numbers below
// the stored offset.
func TestKilledAndRestartedTheSequencerNeverReusesANumberOrLeavesAGap(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var next uint64
	for round := 0; round < 4; round++ {
		target := next + 150 + uint64(rng.Intn(150))
		next = runAndKill(t, dir, target, time.Duration(rng.Intn(3000))*time.Microsecond)
	}
	store, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	events := store.Events()
	if len(events) < 600 {
		t.Fatalf("only %d events reached the PLog", len(events))
	}
	last := map[sequencer.NumberKey]Number{}
	for i, e := range events {
		if e.Offset != sequencer.PLogOffset(i+1) {
			t.Fatalf("the PLog's event %d is at offset %d: a gap", i, e.Offset)
		}
		for _, v := range e.Values {
			if v.Value != last[v.Key]+1 {
				t.Fatalf("event %d: %+v after %d: a number reused or skipped", e.Offset, v.Key, last[v.Key])
			}
			last[v.Key] = v.Value
		}
	}
	stored, _ := store.ReadNextPLogOffset()
	for _, e := range events {
		for _, v := range e.Values {
			if e.Offset < stored && store.Number(v.Key.WSID, v.Key.SeqID) < v.Value {
				t.Fatalf("event %d below the stored offset %d has %+v=%d, the view %d", e.Offset, stored,
					v.Key, v.Value, store.Number(v.Key.WSID, v.Key.SeqID))
			}
		}
	}
	// A last start after the kills continues the PLog.
	s := open(t, durableParams, store)
	if o := start(t, s, 1, 3); o != events[len(events)-1].Offset+1 {
		t.Fatalf("offset %d after the kills, want %d", o, events[len(events)-1].Offset+1)
	}
	if n := next1(t, s); n != last[sequencer.NumberKey{WSID: 3, SeqID: 1}]+1 {
		t.Fatalf("number %d after the kills, want %d", n, last[sequencer.NumberKey{WSID: 3, SeqID: 1}]+1)
	}
}

func next1(t *testing.T, s *sequencer.Sequencer) Number { return next(t, s, 1) }

// runAndKill runs a child over dir until it reports the PLog's next offset at target or more,
// waits extra, SIGKILLs it and returns the last offset it reported.
func runAndKill(t *testing.T, dir string, target uint64, extra time.Duration) uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan uint64, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
				lines <- n
			}
		}
		close(lines)
	}()
	var got uint64
	deadline := time.After(60 * time.Second)
	for got < target {
		select {
		case n, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("the child ended at %d before it was killed", got)
			}
			got = n
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the child reached only %d of %d in 60 s", got, target)
		}
	}
	time.Sleep(extra)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for n := range lines {
		got = max(got, n)
	}
	return got
}
