/**
 * The test plan of spec 000 (basic usage, actualization on error, several storages), run over
 * a synchronous, an asynchronous and a randomly delayed storage.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStorage, Sequencer } from '@sequencer/wasm';
import { KIND, SEQ, WS, modes, params } from './helpers.js';

for (const mode of modes) {
  describe(`test plan, ${mode.name}`, () => {
    test('basic usage: start continues after PLog event 42, next after its value 13, flush stores 14 and offset 43', async () => {
      const storage = mode.make();
      storage.seedEvent(42, [{ ws: WS, seq: SEQ, value: 13 }]);
      const s = new Sequencer({ params: params(), storage });
      assert.equal(await s.start(KIND, WS), 0, 'not now while actualizing');
      assert.equal(s.notNowReason, 'actualizing');
      await s.whenReady();
      assert.equal(s.status, 'ready');

      assert.equal(await s.start(KIND, WS), 43);
      assert.equal(s.status, 'in-transaction');
      assert.equal(s.next(SEQ), 14);
      s.flush();
      await s.whenFlushed();

      assert.deepEqual(Array.from(await storage.readNumbers(WS, [SEQ])), [14]);
      assert.equal(storage.nextOffset, 43, 'replay restarts at the last flushed event');
      assert.equal(storage.offsetAheadOfValues(), null);
      s.close();
    });

    test('actualization on error: the dropped transaction never reaches storage, and its offset and numbers are handed out again', async () => {
      const storage = mode.make();
      const s = await Sequencer.open({ params: params(), storage });
      assert.equal(await s.start(KIND, WS), 1);
      const first = s.next(SEQ);
      assert.equal(first, 1, 'a sequence never seen starts at its initial value');
      const second = s.next(SEQ);

      // The flusher gets every chance to run: nothing of the unfinished transaction is written.
      await s.whenFlushed();
      assert.equal(storage.numbers.size, 0);

      s.actualize();
      assert.equal(await s.start(KIND, WS), 0);
      assert.equal(s.notNowReason, 'actualizing');
      await s.whenReady();
      assert.equal(await s.start(KIND, WS), 1);
      assert.equal(s.next(SEQ), first);
      assert.equal(s.next(SEQ), second);
      s.close();
    });

    test('several storages: start and next continue from the view and the PLog for each workspace and kind', async () => {
      for (const c of severalStorages(mode.make)) {
        const s = new Sequencer({ params: c.params, storage: c.storage, plogPageSize: 2 });
        await s.whenReady();
        for (const [kind, ws, seq, want] of c.expect) {
          assert.equal(await s.start(kind, ws), c.expectedOffset, `${c.name}: start(${kind}, ${ws})`);
          assert.equal(s.next(seq), want, `${c.name}: next(${seq}) in ws ${ws}`);
          s.actualize();
          await s.whenReady();
        }
        s.close();
      }
    });
  });
}

/** The storages of the batcher test: empty, and several workspaces, kinds and values. */
function severalStorages(make) {
  const params = { seqTypes: { 1: { 1: 1, 2: 100 }, 2: { 1: 5, 7: 1000 } } };
  const several = make();
  // Stored view and offset, then PLog events from that offset on (keys repeat; max wins).
  several.numbers.set(10, new Map([[1, 40]]));
  several.numbers.set(20, new Map([[7, 1500]]));
  several.nextOffset = 8;
  several.seedEvent(7, [{ ws: 10, seq: 1, value: 39 }]);
  several.seedEvent(8, [
    { ws: 10, seq: 2, value: 150 },
    { ws: 30, seq: 1, value: 9 },
    { ws: 10, seq: 2, value: 149 },
  ]);
  several.seedEvent(9, [
    { ws: 20, seq: 7, value: 1501 },
    { ws: 30, seq: 1, value: 11 },
  ]);
  several.seedEvent(10, []);
  return [
    {
      name: 'empty',
      params,
      storage: make(),
      expect: [
        [1, 10, 1, 1],
        [1, 10, 2, 100],
        [2, 20, 7, 1000],
        [2, 20, 1, 5],
      ],
      expectedOffset: 1,
    },
    {
      name: 'several workspaces, kinds and values',
      params,
      storage: several,
      expect: [
        [1, 10, 1, 41],
        [1, 10, 2, 151],
        [2, 20, 7, 1502],
        [2, 20, 1, 5],
        [2, 30, 1, 12],
        [1, 30, 1, 12],
        [1, 40, 2, 100],
      ],
      expectedOffset: 11,
    },
  ];
}

test('an empty storage: the first start returns offset 1', async () => {
  const s = await Sequencer.open({ params: params(), storage: new MemoryStorage() });
  assert.equal(await s.start(KIND, WS), 1);
  s.close();
});
