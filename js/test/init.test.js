/**
 * The browser entry's `init(input)`, in Node (one child process per case: the wasm can be
 * instantiated once per process): the API refuses with `NOT_INITIALIZED` before it, each kind
 * of input instantiates the wasm, a second call returns the same promise, bad input and a
 * failed load reject without sticking. The same in a real browser: test/browser.test.js.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ENTRY = new URL('../src/browser.js', import.meta.url).href;
const WASM = fileURLToPath(new URL('../pkg/sequencer_bg.wasm', import.meta.url));

/**
 * Runs `body` in a fresh Node process with `api` (the browser entry) and `bytes` (the wasm)
 * in scope, and returns what it prints as JSON.
 * @param {string} body
 */
async function child(body) {
  const script = `
    import { readFileSync } from 'node:fs';
    import * as api from ${JSON.stringify(ENTRY)};
    const bytes = readFileSync(${JSON.stringify(WASM)});
    /** Numbers one event after event 42, as the quickstart does. */
    async function numbers() {
      const storage = new api.MemoryStorage();
      storage.seedEvent(42, [{ ws: 1000, seq: 1, value: 13 }]);
      const seq = await api.Sequencer.open({ params: { seqTypes: { 1: { 1: 1 } } }, storage });
      const offset = await seq.start(1, 1000);
      const id = seq.next(1);
      storage.append(offset, [{ ws: 1000, seq: 1, value: id }]);
      seq.flush();
      await seq.whenFlushed();
      seq.close();
      return [offset, id, storage.number(1000, 1)];
    }
    const codeOf = (e) => (e instanceof api.SequencerError ? e.code : e?.constructor?.name ?? String(e));
    ${body}
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
  return JSON.parse(stdout);
}

test('before init every entry into the wasm throws NotInitializedError (code NOT_INITIALIZED), and the API works after it', async () => {
  const result = await child(`
    const storage = new api.MemoryStorage();
    const params = { seqTypes: { 1: { 1: 1 } } };
    const calls = [
      () => new api.Sequencer({ params, storage }),
      () => new api.EventSequencer({ storage }),
      () => api.systemParams(),
      () => api.eventValues({ ws: 1, wlogOffset: 1 }),
    ];
    const before = calls.map((call) => { try { call(); return 'no error'; } catch (e) { return e instanceof api.NotInitializedError ? e.code : String(e); } });
    const opened = await api.Sequencer.open({ params, storage }).then(() => 'opened', codeOf);
    const message = (() => { try { api.systemParams(); } catch (e) { return e.message; } })();
    await api.init(bytes);
    console.log(JSON.stringify({ before, opened, message, after: await numbers() }));
  `);
  assert.deepEqual(result.before, Array(4).fill('NOT_INITIALIZED'));
  assert.equal(result.opened, 'NOT_INITIALIZED');
  assert.match(result.message, /^systemParams\(\) needs the wasm module: call and await init\(\) first/);
  assert.deepEqual(result.after, [43, 14, 14]);
});

const INPUTS = {
  'a Uint8Array': 'new Uint8Array(bytes)',
  'an ArrayBuffer': 'bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)',
  'a WebAssembly.Module': 'new WebAssembly.Module(bytes)',
  'a Response': "new Response(bytes, { headers: { 'content-type': 'application/wasm' } })",
  'a Promise of a Response': "Promise.resolve(new Response(bytes, { headers: { 'content-type': 'application/wasm' } }))",
  "wasm-bindgen's { module_or_path }": '{ module_or_path: bytes }',
};

for (const [name, input] of Object.entries(INPUTS)) {
  test(`init with ${name} instantiates the wasm, a second call returns the same promise, and events are numbered`, async () => {
    const result = await child(`
      const first = api.init(${input});
      const second = api.init(new Uint8Array(0));
      await first;
      console.log(JSON.stringify({ same: first === second, third: api.init() === first, numbers: await numbers() }));
    `);
    assert.deepEqual(result, { same: true, third: true, numbers: [43, 14, 14] });
  });
}

test('init rejects bad input with INVALID_ARGUMENT and a failed load with the loader\'s error, and neither sticks: the next call loads', async () => {
  const result = await child(`
    const bad = [42, null, {}, true];
    const refused = [];
    for (const input of bad) refused.push(await api.init(input).then(() => 'loaded', codeOf));
    const message = await api.init(42).catch((e) => e.message);
    const broken = await api.init(new Uint8Array([0, 97, 115, 109, 9])).then(() => 'loaded', codeOf);
    const still = (() => { try { api.systemParams(); return 'no error'; } catch (e) { return codeOf(e); } })();
    await api.init(bytes);
    console.log(JSON.stringify({ refused, message, broken, still, numbers: await numbers() }));
  `);
  assert.deepEqual(result.refused, ['INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT']);
  assert.match(result.message, /^init\(input\): expected a URL or string, .* got number$/);
  assert.equal(result.broken, 'CompileError');
  assert.equal(result.still, 'NOT_INITIALIZED');
  assert.deepEqual(result.numbers, [43, 14, 14]);
});

test('the Node entry needs no init: the API works at import, and init() resolves at once to one promise', async () => {
  const node = new URL('../src/node.js', import.meta.url).href;
  const { stdout } = await promisify(execFile)(process.execPath, [
    '--input-type=module',
    '-e',
    `import * as api from ${JSON.stringify(node)};
     const params = api.systemParams();
     const p = api.init();
     console.log(JSON.stringify({ kinds: Object.keys(params.seqTypes), same: p === api.init(new Uint8Array(0)), value: await p }));`,
  ]);
  assert.deepEqual(JSON.parse(stdout), { kinds: ['0'], same: true });
});
