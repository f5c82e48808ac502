// Every conformance scenario through the wasm-bindgen core (js/pkg): one test per scenario.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario, scenarioFiles, StepFailed } from '../js-common/scenario.mjs';
import { makeBinding } from './binding.mjs';

const files = scenarioFiles();
test('there are scenarios', () => assert.ok(files.length > 0));
for (const path of files) {
  test(path.split('/').pop().replace(/\.json$/, ''), () => {
    try {
      runScenario('wasm-bindgen', path, makeBinding);
    } catch (e) {
      if (e instanceof StepFailed) assert.fail(e.message);
      throw e;
    }
  });
}
