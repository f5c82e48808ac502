// Compiled (not run) by `tsc -p tsconfig.json` (lib ES2020 + DOM): every kind of input `init`
// takes in a browser, and the error a call before it throws.
import { init, NotInitializedError, Sequencer, MemoryStorage, type InitInput } from 'plog-sequencer';

export async function initUsage(wasmUrl: string): Promise<void> {
  try {
    new Sequencer({ params: { seqTypes: { 1: { 1: 1 } } }, storage: new MemoryStorage() });
  } catch (e) {
    if (e instanceof NotInitializedError) {
      const code: 'NOT_INITIALIZED' = e.code;
      void code;
    }
  }
  const inputs: InitInput[] = [
    wasmUrl,
    new URL(wasmUrl, 'https://example.test/'),
    new Request(wasmUrl),
    new Response(new Uint8Array(8)),
    new ArrayBuffer(8),
    new Uint8Array(8),
    new WebAssembly.Module(new Uint8Array(8)),
  ];
  void inputs;
  const once: Promise<void> = init(fetch(wasmUrl));
  await once;
  await init();
}
