/**
 * The ES-module package in a real browser: a page served from localhost imports it in headless
 * Chromium (Debian's `chromium`, driven by playwright-core) and runs a short scenario.
 */

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/** Serves the package directory on 127.0.0.1 at a free port. */
async function serve(root) {
  const server = createServer(async (req, res) => {
    const path = normalize(join(root, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!path.startsWith(root.endsWith(sep) ? root : root + sep)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(path);
      res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

let server;
let context;
let userDataDir;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (scripts/test-js.sh does)`);
  server = await serve(ROOT);
  userDataDir = await mkdtemp(join(tmpdir(), 'sequencer-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
});

after(async () => {
  await context?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

for (const input of ['default', 'url', 'request', 'response', 'bytes', 'module']) {
  test(`in headless Chromium the ES-module package refuses calls before init, loads through init (${input}), runs 101 transactions and a batch, flushes and reports a coded misuse`, async () => {
    const page = await context.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    const { port } = server.address();
    await page.goto(`http://127.0.0.1:${port}/test/browser/index.html?input=${input}`);
    await page.waitForFunction(() => window.sequencerResult !== undefined, null, { timeout: 30_000 });
    const result = await page.evaluate(() => window.sequencerResult);
    assert.deepEqual(problems, []);
    assert.deepEqual(result, {
      before: 'NOT_INITIALIZED',
      same: true,
      offset: 43,
      id: 14,
      last: 114,
      stored: 114,
      batch: [2, 144, 1, 1],
      nextOffset: 145,
      code: 'NO_TRANSACTION',
      status: 'closed',
    });
    await page.close();
  });
}
