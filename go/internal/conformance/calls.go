package conformance

import (
	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// callStep makes a step's call and checks `expect` / `expect_error`.
func (r *runner) callStep(st map[string]any) error {
	got, err := r.call(st)
	if want, ok := st["expect_error"]; ok {
		if err == nil {
			return failf("expected error %v, got success %s", want, canonical(got))
		}
		if c := errorCase(err); c != want {
			return failf("expected error %v, got %v", want, err)
		}
		return nil
	}
	if err != nil {
		return failf("refused: %v", err)
	}
	if want, ok := st["expect"]; ok {
		if name := st["call"]; name == "held_numbers" || name == "system_params" {
			full := object(got)
			picked := map[string]any{}
			for k := range object(want) {
				picked[k] = full[k]
			}
			got = picked
		}
		if !same(got, want) {
			return failf("expected %s, got %s", canonical(want), canonical(got))
		}
	}
	return nil
}

func startValue(s guest.Start) map[string]any {
	if s.Started {
		return map[string]any{"started": num(s.Offset)}
	}
	return map[string]any{"not_now": s.Reason.String()}
}

func (r *runner) call(st map[string]any) (any, error) {
	name, _ := st["call"].(string)
	switch name {
	case "create":
		r.host.queue, r.host.wake = nil, nil
		if r.inst != nil {
			r.inst.Close()
		}
		var err error
		if r.inst, err = guest.New(r.host); err != nil {
			return nil, err
		}
		p := st["params"]
		if p == nil {
			p = r.scenario["params"]
		}
		params, system := paramsOf(p)
		if system {
			if params, err = r.inst.SystemParams(&params); err != nil {
				return nil, err
			}
		}
		err = r.inst.Create(&params)
		r.created = err == nil
		return nil, err
	case "system_params":
		inst, err := guest.New(r.host)
		if err != nil {
			return nil, err
		}
		defer inst.Close()
		params, _ := paramsOf(st["params"])
		p, err := inst.SystemParams(&params)
		if err != nil {
			return nil, err
		}
		return scenarioParams(p), nil
	}
	if !r.created {
		return nil, failf("no sequencer: a `create` step must come first")
	}
	i := r.inst
	switch name {
	case "start":
		s, err := i.Start(uint16(mustU64(st["kind"])), mustU64(st["ws"]))
		return startValue(s), err
	case "start_next":
		var seqs []uint16
		for _, s := range list(st["seqs"]) {
			seqs = append(seqs, uint16(mustU64(s)))
		}
		s, numbers, err := i.StartNext(uint16(mustU64(st["kind"])), mustU64(st["ws"]), seqs, nil)
		v := startValue(s)
		ns := make([]any, len(numbers))
		for k, n := range numbers {
			ns[k] = num(n)
		}
		v["numbers"] = ns
		return v, err
	case "next":
		n, err := i.Next(uint16(mustU64(st["seq"])))
		return num(n), err
	case "flush":
		return nil, i.Flush()
	case "actualize":
		return nil, i.Actualize()
	case "pump":
		return nil, i.Pump()
	case "cleanup":
		err := i.Cleanup()
		r.host.queue, r.host.wake = nil, nil
		return nil, err
	case "status":
		s, err := i.Status()
		return s.String(), err
	case "held_numbers":
		h, err := i.HeldNumbers()
		return map[string]any{"cached": num(uint64(h.Cached)), "unflushed": num(uint64(h.Unflushed)),
			"transaction": num(uint64(h.Transaction))}, err
	case "deliver":
		o := mustU64(st["op"])
		kept := r.host.queue[:0]
		for _, q := range r.host.queue {
			if q.op != o {
				kept = append(kept, q)
			}
		}
		r.host.queue = kept
		return nil, i.Deliver(o, outcomeOf(st["outcome"]))
	case "start_event":
		s, wlog, err := i.StartEvent(mustU64(st["ws"]))
		if s.Started {
			return map[string]any{"started": map[string]any{"plog": num(s.Offset), "wlog": num(wlog)}}, err
		}
		return map[string]any{"not_now": s.Reason.String()}, err
	case "next_rec_id":
		n, err := i.NextRecID()
		return num(n), err
	case "next_c_rec_id":
		n, err := i.NextCRecID()
		return num(n), err
	case "finish_event":
		return nil, i.FinishEvent()
	case "cancel_event":
		return nil, i.CancelEvent()
	case "event_status":
		s, err := i.EventStatus()
		return s.String(), err
	}
	return nil, failf("unknown call %q", name)
}

func outcomeOf(v any) *guest.Outcome {
	if v == "written" {
		return &guest.Outcome{Kind: guest.OutcomeWritten}
	}
	o := object(v)
	if n, ok := o["next_offset"]; ok {
		return &guest.Outcome{Kind: guest.OutcomeNextOffset, NextOffset: mustU64(n)}
	}
	if m, ok := o["failed"]; ok {
		s, _ := m.(string)
		return &guest.Outcome{Kind: guest.OutcomeFailed, Message: s}
	}
	p := object(o["plog_page"])
	var words []uint64
	for _, e := range list(p["values"]) {
		for _, w := range list(e) {
			words = append(words, mustU64(w))
		}
	}
	return &guest.Outcome{Kind: guest.OutcomePlogPage, Words: words, Next: mustU64(p["next"]), End: p["end"] == true}
}

// paramsOf is the scenario form of params (defaults filled in; durations in ms) as the WIT's,
// and whether it asks for the system sequences.
func paramsOf(v any) (guest.Params, bool) {
	o := map[string]any{}
	if v != nil {
		o = object(v)
	}
	get := func(k string) uint64 {
		if x, ok := o[k]; ok {
			return mustU64(x)
		}
		return defaults[k]
	}
	p := guest.Params{
		MaxUnflushedValues: uint32(get("max_unflushed_values")), LRUCacheSize: uint32(get("lru_cache_size")),
		BatcherDelayNs: get("batcher_delay_ms") * ms, RetryDelayNs: get("retry_delay_ms") * ms,
		MaxRetryDelayNs: get("max_retry_delay_ms") * ms, RetryJitterPercent: uint8(get("retry_jitter_percent")),
	}
	for _, k := range listOr(o["kinds"]) {
		x := list(k)
		ks := guest.KindSequences{Kind: uint16(mustU64(x[0]))}
		for _, s := range list(x[1]) {
			y := list(s)
			ks.Sequences = append(ks.Sequences, [2]uint64{mustU64(y[0]), mustU64(y[1])})
		}
		p.Kinds = append(p.Kinds, ks)
	}
	return p, o["system"] == true
}

// scenarioParams is p in the scenario's form, kinds and sequences sorted.
func scenarioParams(p guest.Params) map[string]any {
	kinds := make([]any, 0, len(p.Kinds))
	for _, k := range p.Kinds {
		seqs := make([]any, 0, len(k.Sequences))
		for _, s := range k.Sequences {
			seqs = append(seqs, []any{num(s[0]), num(s[1])})
		}
		kinds = append(kinds, []any{num(uint64(k.Kind)), sortRows(seqs)})
	}
	return map[string]any{
		"kinds": sortKinds(kinds), "max_unflushed_values": num(uint64(p.MaxUnflushedValues)),
		"lru_cache_size": num(uint64(p.LRUCacheSize)), "batcher_delay_ms": num(p.BatcherDelayNs / ms),
		"retry_delay_ms": num(p.RetryDelayNs / ms), "max_retry_delay_ms": num(p.MaxRetryDelayNs / ms),
		"retry_jitter_percent": num(uint64(p.RetryJitterPercent)),
	}
}

func sortKinds(kinds []any) []any {
	out := append([]any(nil), kinds...)
	for a := 1; a < len(out); a++ {
		for b := a; b > 0 && mustU64(list(out[b])[0]) < mustU64(list(out[b-1])[0]); b-- {
			out[b], out[b-1] = out[b-1], out[b]
		}
	}
	return out
}
