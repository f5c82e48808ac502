package guest

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

var errOutOfBounds = errors.New("the module handed a pointer or length out of its memory's bounds")

// Trap is a call that trapped (or a module that broke its ABI): the instance is unusable
// afterwards; make a new one and create a sequencer again over the same storage.
type Trap struct {
	// Call is the export that trapped.
	Call string
	// Cause is wazero's error (or the ABI breach found).
	Cause error
}

// Error says which call trapped and why.
func (t *Trap) Error() string {
	return fmt.Sprintf("the sequencer's module trapped in %s: %v", t.Call, t.Cause)
}

// Unwrap gives wazero's error.
func (t *Trap) Unwrap() error { return t.Cause }

// Instance is one instance of the core module holding (after Create) one sequencer.
type Instance struct {
	mod  api.Module
	mem  api.Memory
	ctx  context.Context
	host Host
	f    *exports

	// rep is the sequencer's rep, as `create` reported it through [resource-new].
	rep    uint32
	hasRep bool
	// trapped is the trap that made the instance unusable, if one did.
	trapped *Trap

	// stack is every call's parameters and results (no call allocates one); inner is the stack
	// of the calls made from inside an import (cabi_realloc).
	stack [16]uint64
	inner [4]uint64

	// Scratch buffers the imports reuse.
	u16Scratch  []uint16
	wsScratch   []uint64
	wordScratch []uint64
	numScratch  []uint64
}

// exports are the module's functions an Instance calls.
type exports struct {
	realloc                  api.Function
	create, dtor, createPost api.Function

	start, startStatus, next, flush, flushStatus, actualize, actualizeBeside api.Function
	cleanup, status, heldNumbers, deliver, deliverWords, pump, stage         api.Function
	startNextQuad, flushStartNextQuad                                        api.Function
	startNext, flushStartNext, startNextPost, flushStartNextPost             api.Function
	startBatch, flushStartBatch, startBatchPost, flushStartBatchPost         api.Function
	startAhead, take, takeNext, takeFlush, takeFlushStartAhead               api.Function
	lastError, lastErrorPost                                                 api.Function

	systemParams, systemParamsPost                             api.Function
	startEvent, startEventPost                                 api.Function
	startEventAhead, startEventAheadPost                       api.Function
	takeFlushStartEventAhead, takeFlushStartEventAheadPost     api.Function
	nextRecID, nextRecIDPost, nextCRecID, nextCRecIDPost       api.Function
	finishEvent, finishEventPost, cancelEvent, cancelEventPost api.Function
	eventStatus                                                api.Function
}

// New instantiates the core module with host as its imports. No sequencer is created yet
// (Create makes it); SystemParams needs none.
func New(host Host) (*Instance, error) {
	rt, err := load()
	if err != nil {
		return nil, err
	}
	i := &Instance{host: host}
	i.ctx = context.WithValue(context.Background(), instanceKey{}, i)
	mod, err := rt.rt.InstantiateModule(i.ctx, rt.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, fmt.Errorf("sequencer: instantiating the core module: %w", err)
	}
	i.mod = mod
	i.mem = mod.Memory()
	if i.f, err = resolve(mod); err != nil {
		_ = mod.Close(context.Background())
		return nil, err
	}
	return i, nil
}

func resolve(mod api.Module) (*exports, error) {
	var missing []string
	get := func(name string) api.Function {
		f := mod.ExportedFunction(name)
		if f == nil {
			missing = append(missing, name)
		}
		return f
	}
	in := func(n string) api.Function { return get(instancePrefix + n) }
	post := func(name string) api.Function { return get("cabi_post_" + name) }
	ev := func(n string) api.Function { return get(eventsPrefix + n) }
	evPost := func(n string) api.Function { return post(eventsPrefix + n) }
	f := &exports{
		realloc:    get("cabi_realloc"),
		create:     get(apiPrefix + "[static]sequencer.create"),
		createPost: post(apiPrefix + "[static]sequencer.create"),
		dtor:       get(apiPrefix + "[dtor]sequencer"),

		start: in("start"), startStatus: in("start-status"), next: in("next"), flush: in("flush"),
		flushStatus: in("flush-status"), actualize: in("actualize"),
		actualizeBeside: in("actualize-beside-write"), cleanup: in("cleanup"), status: in("status"),
		heldNumbers: in("held-numbers"), deliver: in("deliver"), deliverWords: in("deliver-plog-words"),
		pump: in("pump"), stage: in("stage"),
		startNextQuad: in("start-next-quad"), flushStartNextQuad: in("flush-start-next-quad"),
		startNext: in("start-next"), startNextPost: post(instancePrefix + "start-next"),
		flushStartNext: in("flush-start-next"), flushStartNextPost: post(instancePrefix + "flush-start-next"),
		startBatch: in("start-batch"), startBatchPost: post(instancePrefix + "start-batch"),
		flushStartBatch: in("flush-start-batch"), flushStartBatchPost: post(instancePrefix + "flush-start-batch"),
		startAhead: in("start-ahead"), take: in("take"), takeNext: in("take-next"), takeFlush: in("take-flush"),
		takeFlushStartAhead: in("take-flush-start-ahead"),
		lastError:           in("last-error"), lastErrorPost: post(instancePrefix + "last-error"),

		systemParams: ev("system-params"), systemParamsPost: evPost("system-params"),
		startEvent: ev("start-event"), startEventPost: evPost("start-event"),
		startEventAhead: ev("start-event-ahead"), startEventAheadPost: evPost("start-event-ahead"),
		takeFlushStartEventAhead:     ev("take-flush-start-event-ahead"),
		takeFlushStartEventAheadPost: evPost("take-flush-start-event-ahead"),
		nextRecID:                    ev("next-rec-id"), nextRecIDPost: evPost("next-rec-id"),
		nextCRecID: ev("next-c-rec-id"), nextCRecIDPost: evPost("next-c-rec-id"),
		finishEvent: ev("finish-event"), finishEventPost: evPost("finish-event"),
		cancelEvent: ev("cancel-event"), cancelEventPost: evPost("cancel-event"),
		eventStatus: ev("status"),
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sequencer: the core module lacks %v (not sequencer:plugin@0.3.0's)", missing)
	}
	return f, nil
}

// Close frees the instance (its sequencer, if any, goes with it; nothing is called in it).
func (i *Instance) Close() {
	if i.mod != nil {
		_ = i.mod.Close(context.Background())
	}
}

// Trapped is the trap that made the instance unusable, or nil.
func (i *Instance) Trapped() error {
	if i.trapped == nil {
		return nil
	}
	return i.trapped
}

// call runs f with the first n slots of the stack as its parameters; its results are then at
// the stack's start.
func (i *Instance) call(name string, f api.Function) error {
	if i.trapped != nil {
		return i.trapped
	}
	if err := f.CallWithStack(i.ctx, i.stack[:]); err != nil {
		return i.trap(name, err)
	}
	return nil
}

func (i *Instance) trap(name string, err error) *Trap {
	if i.trapped == nil {
		i.trapped = &Trap{Call: name, Cause: err}
	}
	return i.trapped
}

// post calls a cabi_post_ function on the result pointer ptr.
func (i *Instance) post(name string, f api.Function, ptr uint32) error {
	i.stack[0] = uint64(ptr)
	return i.call(name+" (post-return)", f)
}

// view is n bytes of memory at ptr, or a trap if the module handed a pointer out of bounds.
func (i *Instance) view(name string, ptr, n uint32) ([]byte, error) {
	b, ok := i.mem.Read(ptr, n)
	if !ok {
		return nil, i.trap(name, errOutOfBounds)
	}
	return b, nil
}

// alloc allocates n bytes aligned to align in the module (cabi_realloc) for a list the host
// hands over; the module owns it afterwards. Outside imports only.
func (i *Instance) alloc(align, n uint32) (uint32, error) {
	if n == 0 {
		return align, nil
	}
	s := &i.stack
	s[0], s[1], s[2], s[3] = 0, 0, uint64(align), uint64(n)
	if err := i.call("cabi_realloc", i.f.realloc); err != nil {
		return 0, err
	}
	return uint32(i.stack[0]), nil
}

// allocInImport is alloc from inside an import (its own stack: the outer call's is in use).
// A failure panics, which traps the outer call.
func (i *Instance) allocInImport(align, n uint32) uint32 {
	if n == 0 {
		return align
	}
	s := i.inner[:]
	s[0], s[1], s[2], s[3] = 0, 0, uint64(align), uint64(n)
	if err := i.f.realloc.CallWithStack(i.ctx, s); err != nil {
		panic(err)
	}
	return uint32(s[0])
}

// readU16s is the list<u16> at ptr (n elements), copied into a scratch buffer.
func (i *Instance) readU16s(ptr, n uint32) []uint16 {
	b, ok := i.mem.Read(ptr, n*2)
	if !ok {
		panic(errOutOfBounds)
	}
	out := i.u16Scratch[:0]
	for k := uint32(0); k < n; k++ {
		out = append(out, uint16(b[2*k])|uint16(b[2*k+1])<<8)
	}
	i.u16Scratch = out
	return out
}

// readU64s is the list<u64> at ptr (n elements), copied into *buf.
func (i *Instance) readU64s(ptr, n uint32, buf *[]uint64) []uint64 {
	if uint64(n)*8 > uint64(i.mem.Size()) {
		panic(errOutOfBounds)
	}
	b, ok := i.mem.Read(ptr, n*8)
	if !ok {
		panic(errOutOfBounds)
	}
	out := (*buf)[:0]
	for k := uint32(0); k < n; k++ {
		out = append(out, le64(b[8*k:]))
	}
	*buf = out
	return out
}

func (i *Instance) scratchNumbers(n int) []uint64 {
	if cap(i.numScratch) < n {
		i.numScratch = make([]uint64, n)
	}
	out := i.numScratch[:n]
	clear(out)
	return out
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func le32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func le16(b []byte) uint16 {
	_ = b[1]
	return uint16(b[0]) | uint16(b[1])<<8
}
