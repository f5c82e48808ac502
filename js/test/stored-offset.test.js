/**
 * What the stored next offset holds, as index.d.ts and the README say (the WIT's
 * `next-plog-offset`): the offset actualization replays from, inclusive. A flush stores the
 * offset of the last event it flushed; a replay with nothing flushed stores the offset after
 * the last event it read. Either way a restart replays from there and numbers on.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStorage, Sequencer } from 'plog-sequencer';
import { KIND, SEQ, WS, params } from './helpers.js';

test('a replay stores the offset after the last event it read, a flush the offset of the last event it flushed, and a restart numbers on from there', async () => {
  const storage = new MemoryStorage();
  storage.seedEvent(42, [{ ws: WS, seq: SEQ, value: 13 }]);
  const first = await Sequencer.open({ params: params(), storage });
  await first.whenFlushed();
  assert.equal(storage.nextOffset, 43, 'after the replay of event 42: the offset after it');

  const offsets = [];
  for (let i = 0; i < 3; i++) {
    const offset = await first.start(KIND, WS);
    storage.append(offset, [{ ws: WS, seq: SEQ, value: first.next(SEQ) }]);
    first.flush();
    offsets.push(offset);
  }
  await first.whenFlushed();
  assert.deepEqual(offsets, [43, 44, 45]);
  assert.equal(storage.nextOffset, 45, 'after flushing events 43..45: the last flushed event, 45');
  first.close();

  const readFrom = [];
  const read = storage.readPlog.bind(storage);
  storage.readPlog = (from, max) => (readFrom.push(from), read(from, max));
  const second = await Sequencer.open({ params: params(), storage });
  assert.equal(readFrom[0], 45, 'a restart replays from the stored offset, that event included');
  assert.equal(await second.start(KIND, WS), 46);
  assert.equal(second.next(SEQ), 17);
  second.close();
});
