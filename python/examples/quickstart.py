"""Number a few events with the sequencer from Python, then restart it over the same storage.

    pip install plog_sequencer-*.whl     # the wheel from scripts/build-plugin.sh
    python quickstart.py

Uses the facade (`start_event`, `next_rec_id`, `finish_event`; docs/DESIGN.md §5) over the
system sequences: the PLog offset, the workspace's WLog offset and its record ids.
"""

from plog_sequencer import EventOffsets, MemoryStorage, Params, Plugin

plugin = Plugin()  # the component bundled in the package, compiled once
storage = MemoryStorage()  # an empty PLog: the first event gets offset 1
params = plugin.system_params(Params())  # kind 0: WLog offset from 1, record ids from 322680000131072


def number_events(seq, workspaces):
    for ws in workspaces:
        event = seq.start_event(ws)  # EventOffsets, or NotNow (only while actualizing or overloaded)
        assert isinstance(event, EventOffsets), event
        record_id = seq.next_rec_id()
        # the command processor appends its event to the PLog, with the numbers it holds
        storage.append(event.plog_offset, [(ws, 1, event.wlog_offset), (ws, 2, record_id)])
        seq.finish_event()  # the event is in the PLog: its numbers are consumed
        print(f"plog {event.plog_offset} ws {ws} wlog {event.wlog_offset} record {record_id}")


with plugin.open(params, storage) as seq:
    seq.run_until_ready()  # actualize: read the stored offset, replay the PLog (empty here)
    number_events(seq, [1000, 1000, 2000])
    seq.run_tasks()  # the flusher writes the numbers, then the next offset
    # the stored offset is where a replay starts: the last event flushed
    print(f"stored: replay from {storage.next_offset}, ws 1000 record {storage.number(1000, 2)}")

with plugin.open(params, storage) as seq:  # a restart: it recovers from storage and the PLog
    seq.run_until_ready()
    number_events(seq, [1000])
