// `npm pack` / `npm publish` guard (the `prepack` script): refuses, in one line, to pack the
// package without its built wasm (js/pkg/ is not in git; scripts/js-build.sh makes it), so a
// clean clone can never publish a package without `pkg/`.
import { existsSync } from 'node:fs';

const needed = ['pkg/sequencer.js', 'pkg/sequencer.d.ts', 'pkg/sequencer_bg.wasm', 'pkg/sequencer_bg.wasm.d.ts'];
const missing = needed.filter((f) => !existsSync(new URL(`../${f}`, import.meta.url)));
if (missing.length > 0) {
  console.error(
    `plog-sequencer: not packing without the built wasm (missing js/${missing.join(', js/')}): run \`bash scripts/js-build.sh\` from the repository root first`,
  );
  process.exit(1);
}
