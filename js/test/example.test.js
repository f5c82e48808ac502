/**
 * The README's quickstart runs as written and prints what its comments promise.
 */

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { promisify } from 'node:util';

test('the quickstart example runs as written and prints offset 43, number 14, stored 14', async () => {
  const script = fileURLToPath(new URL('../examples/quickstart.mjs', import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [script]);
  assert.equal(stdout, '43 14 14\n');
});
