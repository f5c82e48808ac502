# Load the sequencer component from Python and number one event, with the `plog-sequencer`
# package (python/; `pip install` the wheel scripts/build-plugin.sh builds).
# Run: python load_plugin.py [path/to/sequencer.wasm]   -> 43 14 14 43
import sys

from plog_sequencer import MemoryStorage, Params, Plugin

plugin = Plugin(sys.argv[1] if len(sys.argv) > 1 else None)  # default: the bundled component
storage = MemoryStorage(plog={42: [(1000, 1, 13)]})  # the PLog already holds event 42
seq = plugin.open(Params(kinds={1: {1: 1}}), storage)  # kind 1: sequence 1 from 1
seq.run_until_ready()  # actualization: read the stored offset, replay the PLog
offset = seq.start(1, 1000)  # kind 1, workspace 1000: the event's PLog offset (or NotNow)
number = seq.next(1)
storage.append(offset, [(1000, 1, number)])  # the command processor writes its event
seq.flush()
seq.run_tasks()  # the flusher writes 14, then offset 43
print(offset, number, storage.number(1000, 1), storage.next_offset)
