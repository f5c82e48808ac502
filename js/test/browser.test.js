/**
 * The ES-module package in a real browser: a page served from localhost imports it in headless
 * Chromium (Debian's `chromium`, driven by playwright-core), calls it before `init` (refused),
 * loads the wasm through `init` from each kind of input, and runs a short scenario.
 */

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { launch, pageResult, serve, stop, urlOf } from './chromium.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

let server;
let browser;

before(async () => {
  server = await serve(ROOT);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await stop(server);
});

for (const input of ['default', 'url', 'request', 'response', 'bytes', 'module']) {
  test(`in headless Chromium the ES-module package refuses calls before init, loads through init (${input}), runs 101 transactions and a batch, flushes and reports a coded misuse`, async () => {
    const result = await pageResult(browser.context, urlOf(server, `/test/browser/index.html?input=${input}`));
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
  });
}
