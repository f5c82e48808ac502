/**
 * What `npm pack` puts in the package (from `npm pack --dry-run --json`): the built wasm, its
 * glue, the entries, the declarations, the README, the LICENSE; no tests, benches or tools;
 * the publishing metadata. And the `prepack` guard: a package directory without the built
 * `pkg/` refuses to pack, in one line naming the build script.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const JS = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const manifest = JSON.parse(await readFile(join(JS, 'package.json'), 'utf8'));

/** Every file an `exports` entry (any condition) points at. */
function exportTargets(node) {
  if (typeof node === 'string') return [node.replace(/^\.\//, '')];
  return Object.values(node).flatMap(exportTargets);
}

test('npm pack holds the wasm, its glue, the entries, the declarations, README and LICENSE, and no tests, benches or tools', async () => {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], { cwd: JS });
  const [packed] = JSON.parse(stdout);
  const files = packed.files.map((f) => f.path).sort();
  for (const f of [
    'LICENSE',
    'README.md',
    'package.json',
    'pkg/sequencer_bg.wasm',
    'pkg/sequencer.js',
    'src/browser.js',
    'src/node.js',
    'src/node.cjs',
    'src/index.d.ts',
    'examples/quickstart.mjs',
  ]) {
    assert.ok(files.includes(f), `the package lacks ${f}`);
  }
  for (const f of files) {
    assert.ok(!/^(test|bench|tools|node_modules)\//.test(f) && !f.startsWith('tsconfig'), `the package holds ${f}`);
  }
  for (const f of [...exportTargets(manifest.exports), manifest.types.replace(/^\.\//, '')]) {
    assert.ok(files.includes(f), `exports/types point at ${f}, which is not packed`);
  }
  const wasm = packed.files.find((f) => f.path === 'pkg/sequencer_bg.wasm');
  assert.ok(wasm.size > 50_000, `pkg/sequencer_bg.wasm is ${wasm.size} bytes`);
  assert.equal(await readFile(join(JS, 'LICENSE'), 'utf8'), await readFile(join(JS, '..', 'LICENSE'), 'utf8'));
});

test('the manifest publishes publicly, names its repository and folder, and has a require entry for Node', () => {
  assert.deepEqual(manifest.publishConfig, { access: 'public' });
  assert.equal(manifest.repository.type, 'git');
  assert.match(manifest.repository.url, /^git\+https:\/\/.+\.git$/);
  assert.equal(manifest.repository.directory, 'js');
  assert.equal(manifest.exports['.'].node.require, './src/node.cjs');
  assert.equal(manifest.scripts.prepack, 'node tools/prepack.js');
});

test('npm pack without the built pkg/ fails with one line naming scripts/js-build.sh, and writes no tarball', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sequencer-prepack-'));
  try {
    for (const f of ['package.json', 'README.md', 'LICENSE', 'src', 'tools', 'examples']) {
      await cp(join(JS, f), join(dir, f), { recursive: true });
    }
    const failed = await run('npm', ['pack', '--loglevel=error'], { cwd: dir }).then(
      () => null,
      (e) => e,
    );
    assert.ok(failed, 'npm pack succeeded without pkg/');
    const ours = failed.stderr.split('\n').filter((l) => l.startsWith('plog-sequencer:'));
    assert.equal(ours.length, 1, failed.stderr);
    assert.match(ours[0], /not packing without the built wasm \(missing js\/pkg\/sequencer\.js.*run `bash scripts\/js-build\.sh`/);
    assert.deepEqual((await readdir(dir)).filter((f) => f.endsWith('.tgz')), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
