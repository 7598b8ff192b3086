// The test command's page suites (every *.test.mjs under tests/node and tests/browser, in order)
// in one Node process: the browser suites then share one server and one Chromium
// (tests/browser/harness.mjs), where a process for each file started both again, with its first
// renderer (29 s of 414 on two quiet cores at 3063d5b). Run as
// `node --test-reporter=spec tests/run-page-tests.mjs`; a file still runs alone under
// `node --test FILE`.
import { readdirSync } from 'node:fs';
import { test } from 'node:test';

for (const folder of ['node', 'browser']) {
  const directory = new URL(`./${folder}/`, import.meta.url);
  for (const file of readdirSync(directory)
    .filter((name) => name.endsWith('.test.mjs'))
    .sort()) {
    try {
      await import(new URL(file, directory));
    } catch (error) {
      // A file that fails to load fails as a test of its own, and the others still run.
      test(`${folder}/${file} loads`, () => {
        throw error;
      });
    }
  }
}
