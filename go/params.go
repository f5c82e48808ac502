package sequencer

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/plog-sequencer/plog-sequencer/go/internal/guest"
)

// lower is p as the plugin's params, its zero fields given their defaults; values the WIT
// cannot carry are refused with ErrInvalidParams (the plugin checks the rest).
func (p Params) lower() (guest.Params, error) {
	invalid := func(format string, args ...any) (guest.Params, error) {
		return guest.Params{}, &Error{Code: CodeInvalidParams, Text: fmt.Sprintf(format, args...)}
	}
	or := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	dur := func(v, def time.Duration) time.Duration {
		if v == 0 {
			return def
		}
		return v
	}
	max, lru := or(p.MaxNumUnflushedValues, DefaultMaxNumUnflushedValues), or(p.LRUCacheSize, DefaultLRUCacheSize)
	if max < 0 || int64(max) > math.MaxUint32 {
		return invalid("MaxNumUnflushedValues %d is not in 1..%d", max, uint32(math.MaxUint32))
	}
	if lru < 0 || int64(lru) > math.MaxUint32 {
		return invalid("LRUCacheSize %d is not in 1..%d", lru, uint32(math.MaxUint32))
	}
	delays := [3]time.Duration{
		dur(p.BatcherDelayOnToBeFlushedOverflow, DefaultBatcherDelayOnToBeFlushedOverflow),
		dur(p.RetryDelay, DefaultRetryDelay), dur(p.MaxRetryDelay, DefaultMaxRetryDelay),
	}
	for _, d := range delays {
		if d < 0 {
			return invalid("a negative delay (%v)", d)
		}
	}
	g := guest.Params{
		MaxUnflushedValues: uint32(max), LRUCacheSize: uint32(lru),
		BatcherDelayNs: uint64(delays[0]), RetryDelayNs: uint64(delays[1]), MaxRetryDelayNs: uint64(delays[2]),
		RetryJitterPercent: p.RetryJitterPercent,
	}
	kinds := make([]WSKind, 0, len(p.SeqTypes))
	for k := range p.SeqTypes {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(a, b int) bool { return kinds[a] < kinds[b] })
	for _, k := range kinds {
		seqs := make([]SeqID, 0, len(p.SeqTypes[k]))
		for s := range p.SeqTypes[k] {
			seqs = append(seqs, s)
		}
		sort.Slice(seqs, func(a, b int) bool { return seqs[a] < seqs[b] })
		ks := guest.KindSequences{Kind: uint16(k)}
		for _, s := range seqs {
			ks.Sequences = append(ks.Sequences, [2]uint64{uint64(s), uint64(p.SeqTypes[k][s])})
		}
		g.Kinds = append(g.Kinds, ks)
	}
	return g, nil
}

// lift is the plugin's params as Params.
func lift(g guest.Params) Params {
	p := Params{
		SeqTypes:              map[WSKind]map[SeqID]Number{},
		MaxNumUnflushedValues: int(g.MaxUnflushedValues), LRUCacheSize: int(g.LRUCacheSize),
		BatcherDelayOnToBeFlushedOverflow: time.Duration(g.BatcherDelayNs),
		RetryDelay:                        time.Duration(g.RetryDelayNs), MaxRetryDelay: time.Duration(g.MaxRetryDelayNs),
		RetryJitterPercent: g.RetryJitterPercent,
	}
	for _, k := range g.Kinds {
		m := map[SeqID]Number{}
		for _, s := range k.Sequences {
			m[SeqID(s[0])] = Number(s[1])
		}
		p.SeqTypes[WSKind(k.Kind)] = m
	}
	return p
}

// SystemParams is base with the facade's system sequences added (docs/DESIGN.md §5.2:
// workspace kind 0 with the WLog offset from 1, record ids from 322680000131072 and C record
// ids from 322685000131072), its limits kept: the params NewEvents uses.
func SystemParams(base Params) (Params, error) {
	g, err := base.lower()
	if err != nil {
		return Params{}, err
	}
	inst, err := guest.New(nil)
	if err != nil {
		return Params{}, err
	}
	defer inst.Close()
	out, err := inst.SystemParams(&g)
	if err != nil {
		return Params{}, errorOf(err)
	}
	return lift(out), nil
}
