// The test command's page suites (every *.test.mjs under tests/node and tests/browser, in order)
// in one Node process: the browser suites then share one server and one Chromium
// (tests/browser/harness.mjs), where a process for each file started both again, with its first
// renderer (29 s of 414 on two quiet cores at 3063d5b). Run as
// `node --test-reporter=spec tests/run-page-tests.mjs`; a file still runs alone under
// `node --test FILE`.
import { readdirSync } from 'node:fs';

// Each WebAssembly module loaded under Node adds Emscripten's uncaughtException and
// unhandledRejection handlers to the process: a dozen modules in one process pass Node's warning
// at ten.
process.setMaxListeners(32);

for (const folder of ['node', 'browser']) {
  const directory = new URL(`./${folder}/`, import.meta.url);
  for (const file of readdirSync(directory)
    .filter((name) => name.endsWith('.test.mjs'))
    .sort()) {
    await import(new URL(file, directory));
  }
}
