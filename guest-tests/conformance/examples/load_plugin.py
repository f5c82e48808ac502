# Load the sequencer component from Python (`pip install wasmtime==50.0.1`) and number one event.
# Run: python load_plugin.py path/to/sequencer.wasm   -> 43 14 14 43
import sys

import wasmtime
from wasmtime import component as wc


def record(**fields):  # a WIT record: attributes named as in the WIT (kebab-case)
    r = wc.Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


db = {"view": {}, "offset": 0, "plog": {42: [(1000, 1, 13)]}}  # the PLog already holds event 42
ops = []  # storage work the guest began: performed by run_tasks()
engine = wasmtime.Engine()
linker = wc.Linker(engine)
linker.add_wasip2()  # std's wasi:cli and wasi:io imports (the sequencer never calls them)
with linker.root() as root:
    with root.add_instance("sequencer:plugin/storage@0.2.0") as s:
        s.add_func("read-numbers", lambda _, ws, seqs: [db["view"].get((ws, q), 0) for q in seqs])
        s.add_func("read-numbers-many", lambda _, wss, seqs: [db["view"].get((w, q), 0) for w in wss for q in seqs])
        s.add_func("begin-read-next-offset", lambda _, op: ops.append((op, "offset", None)))
        s.add_func("begin-write", lambda _, op, values, nxt: ops.append((op, "write", (values, nxt))))
        s.add_func("begin-read-plog", lambda _, op, first: ops.append((op, "plog", first)))
    with root.add_instance("sequencer:plugin/clock@0.2.0") as c:
        c.add_func("now", lambda _: 0)
        c.add_func("set-wake", lambda _, at: None)  # a real host calls pump() once now() reaches `at`
    with root.add_instance("sequencer:plugin/observer@0.2.0") as o:
        o.add_func("status-changed", lambda _, status: None)  # the status, whenever it changes
store = wasmtime.Store(engine)
store.set_wasi(wasmtime.WasiConfig())
instance = linker.instantiate(store, wc.Component.from_file(engine, sys.argv[1]))
api = instance.get_export_index(store, "sequencer:plugin/sequencer-api@0.2.0")


def export(name):
    f = instance.get_func(store, instance.get_export_index(store, name, api))

    def call(*args):
        r = f(store, *args)
        f.post_return(store)
        if isinstance(r, wc.Variant):  # results come back untagged: a refusal is a value, not raised
            raise RuntimeError(f"refused: {r.tag} {r.payload}")
        return r

    return call


seq = export("[static]sequencer.create")(record(
    kinds=[record(kind=1, sequences=[(1, 1)])], max_unflushed_values=500, lru_cache_size=100_000,
    batcher_delay_ns=5_000_000, retry_delay_ns=500_000_000, max_retry_delay_ns=10_000_000_000,
    retry_jitter_percent=50))
deliver, start, next_number, flush = (export(f"[method]sequencer.{n}") for n in ("deliver", "start", "next", "flush"))


def run_tasks():  # perform what the guest began and report each outcome (None is `written`)
    while ops:
        op, kind, arg = ops.pop(0)
        if kind == "offset":
            deliver(seq, op, db["offset"])  # an int is `next-offset`
        elif kind == "write":
            values, db["offset"] = arg
            db["view"].update({(v.ws, v.seq): v.value for v in values})
            deliver(seq, op, None)
        else:
            found = sorted(o for o in db["plog"] if o >= arg)
            values = [record(offset=o, ws=w, seq=s, value=v) for o in found for w, s, v in db["plog"][o]]
            deliver(seq, op, record(values=values, next=found[-1] + 1 if found else arg, end=True))


run_tasks()  # actualization: read the stored offset, replay the PLog
offset = start(seq, 1, 1000)  # kind 1, workspace 1000: the event's PLog offset (an int; a str is "not now")
number = next_number(seq, 1)
db["plog"][offset] = [(1000, 1, number)]  # the command processor writes its event
flush(seq)
run_tasks()  # the flusher writes 14, then offset 43
print(offset, number, db["view"][(1000, 1)], db["offset"])
