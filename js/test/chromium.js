/**
 * Shared by the browser tests: a static file server on 127.0.0.1 and headless Chromium
 * (Debian's `chromium`, driven by playwright-core) with the flags this machine needs, and a
 * page run that fails on any page error, console error or warning.
 */

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/**
 * Serves the files under `root` on 127.0.0.1 at a free port.
 * @param {string} root
 * @returns {Promise<import('node:http').Server>}
 */
export async function serve(root) {
  const server = createServer(async (req, res) => {
    const path = normalize(join(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
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
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  return server;
}

/** The URL of `path` on `server`. */
export function urlOf(server, path) {
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  return `http://127.0.0.1:${address.port}${path}`;
}

/** Closes `server` (if any), and the connections a browser keeps open to it. */
export function stop(server) {
  if (!server) return Promise.resolve();
  const closed = new Promise((resolve) => server.close(() => resolve(undefined)));
  server.closeAllConnections();
  return closed;
}

/**
 * Starts headless Chromium in a fresh profile; `close()` stops it and removes the profile.
 * @returns {Promise<{ context: import('playwright-core').BrowserContext, close: () => Promise<void> }>}
 */
export async function launch() {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (scripts/test-js.sh does)`);
  const userDataDir = await mkdtemp(join(tmpdir(), 'sequencer-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
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
  return {
    context,
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Opens `url` and returns `window.sequencerResult` once the page sets it; asserts that the
 * page raised no error and logged no error or warning.
 * @param {import('playwright-core').BrowserContext} context
 * @param {string} url
 */
export async function pageResult(context, url) {
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  try {
    await page.goto(url);
    await page.waitForFunction(() => /** @type {any} */ (window).sequencerResult !== undefined, null, { timeout: 30_000 });
    const result = await page.evaluate(() => /** @type {any} */ (window).sequencerResult);
    assert.deepEqual(problems, []);
    return result;
  } finally {
    await page.close();
  }
}
