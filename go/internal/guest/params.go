package guest

// lowerParams hands p's kinds to the module and puts the eight flat parameters of `params`
// at the stack's start (at: the first slot).
func (i *Instance) lowerParams(name string, p *Params) error {
	kinds, err := i.alloc(4, uint32(len(p.Kinds))*12)
	if err != nil {
		return err
	}
	for k, kind := range p.Kinds {
		seqs, err := i.alloc(8, uint32(len(kind.Sequences))*16)
		if err != nil {
			return err
		}
		if len(kind.Sequences) > 0 {
			b, err := i.view(name, seqs, uint32(len(kind.Sequences))*16)
			if err != nil {
				return err
			}
			for j, s := range kind.Sequences {
				clear(b[16*j : 16*j+8])
				b[16*j], b[16*j+1] = byte(s[0]), byte(s[0]>>8)
				putLe64(b[16*j+8:], s[1])
			}
		}
		b, err := i.view(name, kinds+uint32(k)*12, 12)
		if err != nil {
			return err
		}
		clear(b)
		b[0], b[1] = byte(kind.Kind), byte(kind.Kind>>8)
		putLe32(b[4:], seqs)
		putLe32(b[8:], uint32(len(kind.Sequences)))
	}
	s := &i.stack
	s[0], s[1], s[2], s[3] = uint64(kinds), uint64(len(p.Kinds)), uint64(p.MaxUnflushedValues), uint64(p.LRUCacheSize)
	s[4], s[5], s[6], s[7] = p.BatcherDelayNs, p.RetryDelayNs, p.MaxRetryDelayNs, uint64(p.RetryJitterPercent)
	return nil
}

func putLe32(b []byte, v uint32) {
	_ = b[3]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// liftParams reads the `params` at ptr (48 bytes).
func (i *Instance) liftParams(name string, ptr uint32) (Params, error) {
	b, err := i.view(name, ptr, 48)
	if err != nil {
		return Params{}, err
	}
	p := Params{
		MaxUnflushedValues: le32(b[8:]), LRUCacheSize: le32(b[12:]),
		BatcherDelayNs: le64(b[16:]), RetryDelayNs: le64(b[24:]), MaxRetryDelayNs: le64(b[32:]),
		RetryJitterPercent: b[40],
	}
	kinds, n := le32(b), le32(b[4:])
	kb, err := i.view(name, kinds, n*12)
	if err != nil {
		return Params{}, err
	}
	for k := uint32(0); k < n; k++ {
		e := kb[12*k:]
		kind := KindSequences{Kind: le16(e)}
		sb, err := i.view(name, le32(e[4:]), le32(e[8:])*16)
		if err != nil {
			return Params{}, err
		}
		for j := 0; j+16 <= len(sb); j += 16 {
			kind.Sequences = append(kind.Sequences, [2]uint64{uint64(le16(sb[j:])), le64(sb[j+8:])})
		}
		p.Kinds = append(p.Kinds, kind)
	}
	return p, nil
}

// Create is `sequencer.create(params)`: the instance's sequencer, which begins actualizing
// (its first storage work is begun before Create returns).
func (i *Instance) Create(p *Params) error {
	const name = "create"
	if err := i.lowerParams(name, p); err != nil {
		return err
	}
	if err := i.call(name, i.f.create); err != nil {
		return err
	}
	ptr := uint32(i.stack[0])
	ok, refusal, err := i.methodResult(name, ptr)
	if err != nil {
		return err
	}
	if err := i.post(name, i.f.createPost, ptr); err != nil {
		return err
	}
	if !ok {
		return refusal
	}
	if !i.hasRep {
		return i.trap(name, errNoRep)
	}
	return nil
}

// SystemParams is `events.system-params(base)` (needs no sequencer).
func (i *Instance) SystemParams(base *Params) (Params, error) {
	const name = "system-params"
	if err := i.lowerParams(name, base); err != nil {
		return Params{}, err
	}
	if err := i.call(name, i.f.systemParams); err != nil {
		return Params{}, err
	}
	ptr := uint32(i.stack[0])
	p, err := i.liftParams(name, ptr)
	if err != nil {
		return Params{}, err
	}
	return p, i.post(name, i.f.systemParamsPost, ptr)
}
