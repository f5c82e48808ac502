/**
 * Entry point for `require('plog-sequencer')` in Node: the ES-module entry (`node.js`, which
 * has no top-level await) loaded through Node's require of ES modules, so `import` and
 * `require` share one wasm instance and one set of classes. Needs Node >= 20.19; older Node
 * gets a one-line error saying so.
 */

'use strict';

try {
  module.exports = require('./node.js');
} catch (e) {
  if (e && (e.code === 'ERR_REQUIRE_ESM' || e.code === 'ERR_REQUIRE_ASYNC_MODULE')) {
    throw new Error(
      `plog-sequencer: require() needs Node >= 20.19 (require of ES modules; this is ${process.version}); use import instead`,
      { cause: e },
    );
  }
  throw e;
}
