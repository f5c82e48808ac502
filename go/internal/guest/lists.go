package guest

import "github.com/tetratelabs/wazero/api"

// The calls that pass lists: start-next, flush-start-next, start-batch, flush-start-batch.

// StartNext is `start-next(kind, ws, seqs)`; the numbers are appended to out[:0].
func (i *Instance) StartNext(kind uint16, ws uint64, seqs []uint16, out []uint64) (Start, []uint64, error) {
	return i.startNext("start-next", i.f.startNext, i.f.startNextPost, kind, ws, seqs, out)
}

// FlushStartNext is `flush-start-next(kind, ws, seqs)`.
func (i *Instance) FlushStartNext(kind uint16, ws uint64, seqs []uint16, out []uint64) (Start, []uint64, error) {
	return i.startNext("flush-start-next", i.f.flushStartNext, i.f.flushStartNextPost, kind, ws, seqs, out)
}

func (i *Instance) startNext(name string, f, post api.Function, kind uint16, ws uint64, seqs []uint16, out []uint64) (Start, []uint64, error) {
	ptr, err := i.alloc(2, uint32(len(seqs))*2)
	if err != nil {
		return Start{}, nil, err
	}
	if len(seqs) > 0 {
		b, err := i.view(name, ptr, uint32(len(seqs))*2)
		if err != nil {
			return Start{}, nil, err
		}
		for k, s := range seqs {
			b[2*k], b[2*k+1] = byte(s), byte(s>>8)
		}
	}
	s := &i.stack
	s[0], s[1], s[2], s[3] = uint64(kind), ws, uint64(ptr), uint64(len(seqs))
	b, err := i.result(name, f, 32, 8)
	if err != nil {
		return Start{}, nil, err
	}
	res := uint32(i.stack[0])
	start := startOf(b[8:])
	out, err = i.appendU64s(name, out[:0], le32(b[24:]), le32(b[28:]))
	if err != nil {
		return Start{}, nil, err
	}
	return start, out, i.post(name, post, res)
}

func (i *Instance) appendU64s(name string, out []uint64, ptr, n uint32) ([]uint64, error) {
	if n == 0 {
		return out, nil
	}
	b, err := i.view(name, ptr, n*8)
	if err != nil {
		return nil, err
	}
	for k := uint32(0); k < n; k++ {
		out = append(out, le64(b[8*k:]))
	}
	return out, nil
}

// StartBatch is `start-batch(kind, ws, seqs)`; the numbers are appended to out[:0].
func (i *Instance) StartBatch(kind uint16, ws []uint64, seqs Quad, out []uint64) (Batch, error) {
	return i.batch("start-batch", i.f.startBatch, i.f.startBatchPost, kind, ws, seqs, out)
}

// FlushStartBatch is `flush-start-batch(kind, ws, seqs)`.
func (i *Instance) FlushStartBatch(kind uint16, ws []uint64, seqs Quad, out []uint64) (Batch, error) {
	return i.batch("flush-start-batch", i.f.flushStartBatch, i.f.flushStartBatchPost, kind, ws, seqs, out)
}

func (i *Instance) batch(name string, f, post api.Function, kind uint16, ws []uint64, seqs Quad, out []uint64) (Batch, error) {
	ptr, err := i.writeU64s(name, ws)
	if err != nil {
		return Batch{}, err
	}
	i.stack[0], i.stack[1], i.stack[2] = uint64(kind), uint64(ptr), uint64(len(ws))
	i.quadAt(3, seqs)
	b, err := i.result(name, f, 32, 8)
	if err != nil {
		return Batch{}, err
	}
	res := uint32(i.stack[0])
	r := Batch{FirstOffset: le64(b[8:]), Started: le32(b[16:]), NotNow: b[20] == 1, Reason: NotNowReason(b[21])}
	if r.Numbers, err = i.appendU64s(name, out[:0], le32(b[24:]), le32(b[28:])); err != nil {
		return Batch{}, err
	}
	return r, i.post(name, post, res)
}
