/**
 * The npm package as a user gets it: `npm pack` of js/, installed from the tarball into a
 * temporary project, then
 * - bundled by esbuild (`--format=esm` and `iife`, the wasm through the `file` loader and
 *   `init(wasmUrl)`), Vite and webpack (both emit the wasm from the glue's
 *   `new URL(..., import.meta.url)`; `init()` without input), with no build warning, each page
 *   served on 127.0.0.1 and loaded in headless Chromium, where it numbers events;
 * - imported by Node as an ES module and required as CommonJS, numbering events.
 * The bundlers are this folder's pinned devDependencies (scripts/js-ensure-npm.sh installs them).
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as esbuild from 'esbuild';
import * as vite from 'vite';
import webpack from 'webpack';
import { launch, pageResult, serve, stop, urlOf } from '../chromium.js';

const JS = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** What every page and Node script reports: five events numbered after event 42. */
const NUMBERED = {
  numbers: [
    [43, 14],
    [44, 15],
    [45, 16],
    [46, 17],
    [47, 18],
  ],
  stored: 18,
  nextOffset: 47,
};

// The scenario every bundle and Node script runs with the package's API as it loaded it: a
// call before init (refused in a browser; Node's entry needs no init), init (twice: one
// promise), then five events numbered against an async in-memory storage.
const SCENARIO = `
export async function run(api, input) {
  const { init, MemoryStorage, NotInitializedError, Sequencer } = api;
  const params = { seqTypes: { 1: { 1: 1 } } };
  let before = null;
  try {
    new Sequencer({ params, storage: new MemoryStorage() }).close();
  } catch (e) {
    before = e instanceof NotInitializedError ? e.code : String(e);
  }
  const loading = init(input);
  const same = init() === loading;
  await loading;
  const storage = new MemoryStorage({ async: true });
  storage.seedEvent(42, [{ ws: 1000, seq: 1, value: 13 }]);
  const seq = await Sequencer.open({ params, storage });
  const numbers = [];
  for (let i = 0; i < 5; i++) {
    const offset = await seq.start(1, 1000);
    const id = seq.next(1);
    storage.append(offset, [{ ws: 1000, seq: 1, value: id }]);
    seq.flush();
    numbers.push([offset, id]);
  }
  await seq.whenFlushed();
  seq.close();
  return { before, same, numbers, stored: storage.number(1000, 1), nextOffset: storage.nextOffset };
}

export function report(result) {
  result.then(
    (r) => (window.sequencerResult = r),
    (e) => (window.sequencerResult = { error: String(e && e.stack ? e.stack : e) }),
  );
}
`;

const page = (script) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>bundled</title>${script}</head><body></body></html>\n`;

let dir;
let app;
let browser;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sequencer-bundlers-'));
  const { stdout } = await run('npm', ['pack', '--json', '--loglevel=error', '--pack-destination', dir], { cwd: JS });
  const tarball = join(dir, JSON.parse(stdout)[0].filename);
  app = join(dir, 'app');
  await mkdir(join(app, 'src'), { recursive: true });
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', tarball], {
    cwd: app,
  });
  await writeFile(join(app, 'src', 'scenario.js'), SCENARIO);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Serves `root`, loads its index.html in Chromium and returns what the page reported. */
async function load(root) {
  const server = await serve(root);
  try {
    return await pageResult(browser.context, urlOf(server, '/index.html'));
  } finally {
    await stop(server);
  }
}

for (const format of ['esm', 'iife']) {
  test(`esbuild (--format=${format}, the wasm through the file loader and init(wasmUrl)) builds the package without warnings and the page numbers events in Chromium`, async () => {
    const entry = join(app, 'src', `main-esbuild-${format}.js`);
    await writeFile(
      entry,
      `import * as api from 'plog-sequencer';\nimport wasmUrl from 'plog-sequencer/sequencer_bg.wasm';\nimport { report, run } from './scenario.js';\nreport(run(api, wasmUrl));\n`,
    );
    const out = join(app, `dist-esbuild-${format}`);
    const result = await esbuild.build({
      absWorkingDir: app,
      entryPoints: [entry],
      bundle: true,
      format,
      platform: 'browser',
      minify: true,
      loader: { '.wasm': 'file' },
      outdir: out,
      logLevel: 'silent',
    });
    assert.deepEqual([...result.errors, ...result.warnings], []);
    const script = `src="./main-esbuild-${format}.js"`;
    await writeFile(join(out, 'index.html'), page(format === 'esm' ? `<script type="module" ${script}></script>` : `<script ${script}></script>`));
    assert.deepEqual(await load(out), { before: 'NOT_INITIALIZED', same: true, ...NUMBERED });
  });
}

test('Vite (init() without input: Vite emits the wasm) builds the package without warnings and the page numbers events in Chromium', async () => {
  const root = join(app, 'vite');
  await mkdir(root);
  await writeFile(join(root, 'main.js'), `import * as api from 'plog-sequencer';\nimport { report, run } from '../src/scenario.js';\nreport(run(api));\n`);
  await writeFile(join(root, 'index.html'), page('<script type="module" src="./main.js"></script>'));
  const problems = [];
  const logger = vite.createLogger('warn');
  const customLogger = {
    ...logger,
    warn: (msg) => problems.push(`warn: ${msg}`),
    warnOnce: (msg) => problems.push(`warn: ${msg}`),
    error: (msg) => problems.push(`error: ${msg}`),
  };
  const out = join(app, 'dist-vite');
  await vite.build({
    root,
    configFile: false,
    logLevel: 'warn',
    customLogger,
    build: { outDir: out, emptyOutDir: true },
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(await load(out), { before: 'NOT_INITIALIZED', same: true, ...NUMBERED });
});

test('webpack (init() without input: webpack emits the wasm) builds the package without warnings and the page numbers events in Chromium', async () => {
  const entry = join(app, 'src', 'main-webpack.js');
  await writeFile(entry, `import * as api from 'plog-sequencer';\nimport { report, run } from './scenario.js';\nreport(run(api));\n`);
  const out = join(app, 'dist-webpack');
  const stats = await new Promise((resolve, reject) =>
    webpack(
      { mode: 'production', target: 'web', context: app, entry, output: { path: out, filename: 'main.js' } },
      (err, s) => (err ? reject(err) : resolve(s)),
    ),
  );
  const { errors, warnings } = stats.toJson({ all: false, errors: true, warnings: true });
  assert.deepEqual([...errors, ...warnings].map((w) => w.message), []);
  await writeFile(join(out, 'index.html'), page('<script src="./main.js"></script>'));
  assert.deepEqual(await load(out), { before: 'NOT_INITIALIZED', same: true, ...NUMBERED });
});

/**
 * Runs `file`, written into the app as `load` (which brings the package as `api`) and the
 * scenario's run, with Node; returns what the scenario reported.
 */
async function node(file, load) {
  await writeFile(join(app, file), `${load}\nimport('./src/scenario.js').then(({ run }) => run(api)).then((r) => console.log(JSON.stringify(r)));\n`);
  const { stdout, stderr } = await run(process.execPath, [file], { cwd: app });
  assert.equal(stderr, '');
  return JSON.parse(stdout);
}

test('Node imports the installed package as an ES module (no init needed) and numbers events', async () => {
  const result = await node('esm.mjs', "import * as api from 'plog-sequencer';");
  assert.deepEqual(result, { before: null, same: true, ...NUMBERED });
});

test('Node requires the installed package as CommonJS and numbers events, with the same classes as import', async () => {
  const result = await node('cjs.cjs', "const api = require('plog-sequencer');");
  assert.deepEqual(result, { before: null, same: true, ...NUMBERED });
  await writeFile(
    join(app, 'both.mjs'),
    `import { createRequire } from 'node:module';\nimport * as esm from 'plog-sequencer';\nconst cjs = createRequire(import.meta.url)('plog-sequencer');\nconsole.log(cjs.Sequencer === esm.Sequencer && cjs.SequencerError === esm.SequencerError);\n`,
  );
  const { stdout } = await run(process.execPath, ['both.mjs'], { cwd: app });
  assert.equal(stdout, 'true\n');
});
