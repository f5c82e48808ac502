package guest

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// Host is what an Instance's imports call: the storage, the clock and the observer of
// docs/PLUGIN.md ("What a host provides"). Its methods run inside a call into the module: they
// must not call the Instance. A method that panics traps the call.
type Host interface {
	// ReadNumbers fills out (len(seqs) numbers) with the stored last numbers of seqs in ws, 0
	// for a key never stored; an error refuses the start that asked (storage).
	ReadNumbers(ws uint64, seqs []uint16, out []uint64) error
	// ReadNumbersMany is ReadNumbers for each of ws in turn: len(seqs) numbers per workspace.
	ReadNumbersMany(ws []uint64, seqs []uint16, out []uint64) error
	// BeginReadNextOffset queues reading the stored PLog offset; deliver NextOffset later.
	BeginReadNextOffset(op uint64)
	// BeginWrite queues writing values, three words each (workspace, sequence, number), then
	// next as the stored PLog offset. words is the module's memory: copy what you keep.
	BeginWrite(op uint64, words []uint64, next uint64)
	// BeginReadPlog queues reading PLog events from first on; deliver a PLog page later.
	BeginReadPlog(op uint64, first uint64)
	// Now is nanoseconds on a monotonic clock.
	Now() uint64
	// SetWake asks for Pump once Now reaches at (set false: no wake-up wanted).
	SetWake(at uint64, set bool)
	// StatusChanged reports the status the call leaves.
	StatusChanged(s Status)
}

type instanceKey struct{}

// instanceOf is the Instance a call's context was made for (every call into the module goes
// through its Instance's context).
func instanceOf(ctx context.Context) *Instance {
	i, _ := ctx.Value(instanceKey{}).(*Instance)
	if i == nil || i.host == nil {
		panic(fmt.Errorf("sequencer: an import was called outside a call of a sequencer's instance"))
	}
	return i
}

func importReadNumbers(ctx context.Context, m api.Module, stack []uint64) {
	i := instanceOf(ctx)
	ws := stack[0]
	seqs := i.readU16s(uint32(stack[1]), uint32(stack[2]))
	out := i.scratchNumbers(len(seqs))
	i.answerNumbers(uint32(stack[3]), out, i.host.ReadNumbers(ws, seqs, out))
}

func importReadNumbersMany(ctx context.Context, m api.Module, stack []uint64) {
	i := instanceOf(ctx)
	ws := i.readU64s(uint32(stack[0]), uint32(stack[1]), &i.wsScratch)
	seqs := i.readU16s(uint32(stack[2]), uint32(stack[3]))
	out := i.scratchNumbers(len(ws) * len(seqs))
	i.answerNumbers(uint32(stack[4]), out, i.host.ReadNumbersMany(ws, seqs, out))
}

func importBeginReadNextOffset(ctx context.Context, m api.Module, stack []uint64) {
	instanceOf(ctx).host.BeginReadNextOffset(stack[0])
}

func importBeginWrite(ctx context.Context, m api.Module, stack []uint64) {
	i := instanceOf(ctx)
	words := i.readU64s(uint32(stack[1]), uint32(stack[2]), &i.wordScratch)
	if len(words)%3 != 0 {
		panic(fmt.Errorf("storage.begin-write: %d words are not whole values of three", len(words)))
	}
	for k := 1; k < len(words); k += 3 {
		if words[k] > 0xFFFF {
			panic(fmt.Errorf("storage.begin-write: sequence %d does not fit 16 bits", words[k]))
		}
	}
	i.host.BeginWrite(stack[0], words, stack[3])
}

func importBeginReadPlog(ctx context.Context, m api.Module, stack []uint64) {
	instanceOf(ctx).host.BeginReadPlog(stack[0], stack[1])
}

func importNow(ctx context.Context, m api.Module, stack []uint64) {
	stack[0] = instanceOf(ctx).host.Now()
}

func importSetWake(ctx context.Context, m api.Module, stack []uint64) {
	instanceOf(ctx).host.SetWake(stack[1], uint32(stack[0]) == 1)
}

func importStatusChanged(ctx context.Context, m api.Module, stack []uint64) {
	instanceOf(ctx).host.StatusChanged(Status(uint32(stack[0])))
}

// importResourceNew keeps the rep `create` made and answers a handle for it: one sequencer per
// instance, so the handle is always 1.
func importResourceNew(ctx context.Context, m api.Module, stack []uint64) {
	i := instanceOf(ctx)
	i.rep = uint32(stack[0])
	i.hasRep = true
	stack[0] = 1
}

// importResourceDrop is never called by this module (docs/PLUGIN.md): it traps.
func importResourceDrop(ctx context.Context, m api.Module, stack []uint64) {
	panic(fmt.Errorf("[resource-drop]sequencer called: the core module never drops a handle it made"))
}

// answerNumbers writes read-numbers' result at ret: ok(out) or err(message).
func (i *Instance) answerNumbers(ret uint32, out []uint64, err error) {
	mem := i.mem
	if err != nil {
		msg := err.Error()
		ptr := i.allocInImport(1, uint32(len(msg)))
		if !mem.WriteString(ptr, msg) {
			panic(errOutOfBounds)
		}
		i.writeResult(ret, 1, ptr, uint32(len(msg)))
		return
	}
	ptr := i.allocInImport(8, uint32(len(out))*8)
	if len(out) > 0 {
		b, ok := mem.Read(ptr, uint32(len(out))*8)
		if !ok {
			panic(errOutOfBounds)
		}
		for k, n := range out {
			binary.LittleEndian.PutUint64(b[k*8:], n)
		}
	}
	i.writeResult(ret, 0, ptr, uint32(len(out)))
}

func (i *Instance) writeResult(ret uint32, tag byte, ptr, n uint32) {
	if !i.mem.WriteByte(ret, tag) || !i.mem.WriteUint32Le(ret+4, ptr) || !i.mem.WriteUint32Le(ret+8, n) {
		panic(errOutOfBounds)
	}
}
