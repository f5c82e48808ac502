package conformance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// Runner is this runner's name in failures ("[go] scenario ...").
const Runner = "go"

const ms = 1_000_000

var defaults = map[string]uint64{
	"max_unflushed_values": 500, "lru_cache_size": 100000, "batcher_delay_ms": 5,
	"retry_delay_ms": 500, "max_retry_delay_ms": 500, "retry_jitter_percent": 0,
}

// Files are the scenario files in dir, in name order.
func Files(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(files)
	return files, err
}

// RunFile runs the scenario at path; the error names the scenario and the failing step.
func RunFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	v, err := decode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	r := &runner{name: name, host: newHost()}
	defer r.close()
	if err := r.load(v); err != nil {
		return err
	}
	for i, s := range list(r.scenario["steps"]) {
		if err := r.step(s, fmt.Sprintf("steps[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

type runner struct {
	name     string
	scenario map[string]any
	host     *host
	inst     *guest.Instance
	created  bool
}

func (r *runner) close() {
	if r.inst != nil {
		r.inst.Close()
	}
}

func (r *runner) load(v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("[%s] scenario %s: %v", Runner, r.name, p)
		}
	}()
	r.scenario = object(v)
	st, _ := r.scenario["storage"].(map[string]any)
	for _, e := range listOr(st["plog"]) {
		ev := list(e)
		r.host.plog[mustU64(ev[0])] = values(ev[1])
	}
	for _, e := range listOr(st["plog_events"]) {
		offset, vs := eventValues(object(e))
		if _, dup := r.host.plog[offset]; dup {
			return fmt.Errorf("[%s] scenario %s: two PLog events at offset %d", Runner, r.name, offset)
		}
		r.host.plog[offset] = vs
	}
	for _, row := range listOr(st["view"]) {
		x := list(row)
		r.host.view[key{mustU64(x[0]), uint16(mustU64(x[1]))}] = mustU64(x[2])
	}
	if n, ok := st["next_offset"]; ok {
		r.host.nextOffset = mustU64(n)
	}
	if n, ok := r.scenario["page_events"]; ok {
		r.host.pageEvents = int(mustU64(n))
	}
	return nil
}

func listOr(v any) []any {
	if v == nil {
		return nil
	}
	return list(v)
}

func values(v any) []value {
	var out []value
	for _, e := range list(v) {
		x := list(e)
		out = append(out, value{mustU64(x[0]), uint16(mustU64(x[1])), mustU64(x[2])})
	}
	return out
}

var seqOfRecord = map[string]uint16{"CDoc": 3, "CRecord": 3, "ODoc": 2, "ORecord": 2, "WDoc": 2, "WRecord": 2}

// eventValues is the storage adapter's half of the facade: a platform event's offset and its
// sequence values (docs/DESIGN.md §5.4).
func eventValues(e map[string]any) (uint64, []value) {
	ws := mustU64(e["ws"])
	vs := []value{{ws, 1, mustU64(e["wlog"])}}
	for _, r := range listOr(e["records"]) {
		x := list(r)
		kind, _ := x[0].(string)
		seq, ok := seqOfRecord[kind]
		if !ok {
			panic(&StepFailed{Msg: fmt.Sprintf("unknown record kind %q", kind)})
		}
		vs = append(vs, value{ws, seq, mustU64(x[1])})
	}
	var stack []any
	if a, ok := e["argument"]; ok {
		stack = append(stack, a)
	}
	for len(stack) > 0 {
		o := object(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		vs = append(vs, value{ws, 2, mustU64(o["id"])})
		stack = append(stack, listOr(o["children"])...)
	}
	return mustU64(e["offset"]), vs
}

// step runs one step (a repeat runs its inner steps), naming it in a failure.
func (r *runner) step(s any, where string) error {
	st := object(s)
	if n, ok := st["repeat"]; ok {
		for i := 0; i < int(mustU64(n)); i++ {
			for j, inner := range list(st["steps"]) {
				if err := r.step(subst(inner, i), fmt.Sprintf("%s[i=%d].steps[%d]", where, i, j)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := r.doStep(st); err != nil {
		return fmt.Errorf("[%s] scenario %s, %s %s: %w", Runner, r.name, where, canonical(st), err)
	}
	return nil
}

func (r *runner) doStep(st map[string]any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if f, ok := p.(*StepFailed); ok {
				err = f
				return
			}
			err = fmt.Errorf("runner panic: %v", p)
		}
	}()
	switch {
	case has(st, "call"):
		return r.callStep(st)
	case has(st, "run"):
		if st["run"] != "tasks" {
			return failf("unknown run %s", canonical(st["run"]))
		}
		return r.runTasks(st)
	case has(st, "advance_ms"):
		r.host.now += mustU64(st["advance_ms"]) * ms
		if r.host.wake != nil && r.host.now >= *r.host.wake {
			r.host.wake = nil
			if r.inst != nil {
				return r.inst.Pump()
			}
		}
	case has(st, "hold_writes"):
		r.host.hold = st["hold_writes"] == true
	case has(st, "fault"):
		for k, v := range object(st["fault"]) {
			if _, ok := r.host.faults[k]; !ok {
				return failf("unknown fault %q", k)
			}
			r.host.faults[k] = int(mustU64(v))
		}
	case has(st, "append"), has(st, "append_event"):
		var offset uint64
		var vs []value
		if a, ok := st["append"]; ok {
			x := list(a)
			offset, vs = mustU64(x[0]), values(x[1])
		} else {
			offset, vs = eventValues(object(st["append_event"]))
		}
		if want := r.host.plogNext(); offset != want {
			return failf("append at %d: the PLog's next offset is %d", offset, want)
		}
		r.host.plog[offset] = vs
	case has(st, "expect_storage"):
		return r.expectStorage(object(st["expect_storage"]))
	case has(st, "expect_pending"):
		return r.expectPending(list(st["expect_pending"]))
	case has(st, "expect_wake_ms"):
		var got any
		if r.host.wake != nil {
			got = float64(*r.host.wake) / ms
		}
		var want any
		if st["expect_wake_ms"] != nil {
			want = float64(mustU64(st["expect_wake_ms"]))
		}
		if got != want {
			return failf("expected wake at %v ms, got %v", canonical(st["expect_wake_ms"]), got)
		}
	case has(st, "expect_wake_within_ms"):
		b := list(st["expect_wake_within_ms"])
		lo, hi := floatOf(b[0]), floatOf(b[1])
		if r.host.wake == nil {
			return failf("expected a wake-up within [%v, %v] ms, got none", lo, hi)
		}
		got := float64(*r.host.wake) / ms
		if got < lo || got > hi {
			return failf("expected a wake-up within [%v, %v] ms, got %v", lo, hi, got)
		}
	default:
		return failf("unknown step")
	}
	return nil
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func floatOf(v any) float64 {
	n, ok := v.(interface{ Float64() (float64, error) })
	if !ok {
		panic(&StepFailed{Msg: "not a number: " + canonical(v)})
	}
	f, err := n.Float64()
	if err != nil {
		panic(&StepFailed{Msg: err.Error()})
	}
	return f
}

// runTasks performs queued operations by the order rule and delivers each outcome.
func (r *runner) runTasks(st map[string]any) error {
	max := -1
	if m, ok := st["max"]; ok {
		max = int(mustU64(m))
	}
	performed := 0
	for max < 0 || performed < max {
		i := r.host.runnable()
		if i < 0 {
			break
		}
		q := r.host.queue[i]
		r.host.queue = append(r.host.queue[:i], r.host.queue[i+1:]...)
		outcome := r.host.perform(q)
		performed++
		if err := r.inst.Deliver(q.op, outcome); err != nil {
			return failf("deliver of %s op %d was refused: %v", q.kind, q.op, err)
		}
	}
	if want, ok := st["expect_performed"]; ok && uint64(performed) != mustU64(want) {
		return failf("expected %d operations performed, got %d", mustU64(want), performed)
	}
	return nil
}

func (r *runner) expectStorage(want map[string]any) error {
	for k, v := range want {
		var got any
		switch k {
		case "view":
			rows := make([]any, 0, len(r.host.view))
			for key, n := range r.host.view {
				rows = append(rows, []any{num(key.ws), num(uint64(key.seq)), num(n)})
			}
			got, v = sortRows(rows), sortRows(list(v))
		case "next_offset":
			got = num(r.host.nextOffset)
		case "writes":
			got = num(uint64(r.host.writes))
		case "plog_next":
			got = num(r.host.plogNext())
		case "consistent":
			ok := true
			for o, vs := range r.host.plog {
				if o >= r.host.nextOffset {
					continue
				}
				for _, x := range vs {
					ok = ok && r.host.view[key{x.ws, x.seq}] >= x.value
				}
			}
			got = ok
		default:
			return failf("unknown storage check %q", k)
		}
		if !same(got, v) {
			return failf("storage %s: expected %s, got %s", k, canonical(v), canonical(got))
		}
	}
	return nil
}

// sortRows orders rows of numbers lexicographically (rows compare in any order).
func sortRows(rows []any) []any {
	out := append([]any(nil), rows...)
	sort.Slice(out, func(a, b int) bool {
		x, y := list(out[a]), list(out[b])
		for i := 0; i < len(x) && i < len(y); i++ {
			if p, q := mustU64(x[i]), mustU64(y[i]); p != q {
				return p < q
			}
		}
		return len(x) < len(y)
	})
	return out
}

func (r *runner) expectPending(want []any) error {
	got := make([]map[string]any, len(r.host.queue))
	for i, q := range r.host.queue {
		e := map[string]any{"kind": q.kind, "op": num(q.op)}
		switch q.kind {
		case "write":
			rows := make([]any, len(q.values))
			for j, v := range q.values {
				rows[j] = []any{num(v.ws), num(uint64(v.seq)), num(v.value)}
			}
			e["values"], e["next_offset"] = sortRows(rows), num(q.next)
		case "read-plog":
			e["first"] = num(q.first)
		}
		got[i] = e
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		for k, v := range object(want[i]) {
			if k == "values" {
				v = sortRows(list(v))
			}
			ok = ok && same(v, got[i][k])
		}
	}
	if !ok {
		return failf("expected pending %s, got %s", canonical(want), canonical(got))
	}
	return nil
}

// errorCase is the WIT case of a refusal, or "" if err is not one (a trap, a runner error).
func errorCase(err error) string {
	var r *guest.Refusal
	if errors.As(err, &r) {
		return r.Case.String()
	}
	return ""
}
