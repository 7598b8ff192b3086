// The JavaScript entry point's declaration (web/trainmem-api.d.ts): the example page type-checks
// against it, a misuse does not, and it names every member the estimator has and no other.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadCoreForNode } from '../../scripts/first-view.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const declaration = join(root, 'web', 'trainmem-api.d.ts');

/** tsc over `files` with the declaration: {code, output}. */
function typeCheck(files) {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const args = [
    tsc,
    '--noEmit',
    '--allowJs',
    '--checkJs',
    '--target',
    'es2020',
    '--lib',
    'es2020,dom',
    declaration,
    ...files,
  ];
  return new Promise((resolve) => {
    execFile(process.execPath, args, (error, stdout, stderr) =>
      resolve({ code: error ? (error.code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

describe("the JavaScript entry point's types", () => {
  let estimator;
  before(async () => {
    const built = (file) => join(root, 'build-wasm', file);
    estimator = await loadCoreForNode(built('trainmem.js'), built('trainmem.wasm'));
  });

  it('type-check the example page that uses the entry point', async () => {
    const { code, output } = await typeCheck([join(root, 'web', 'api-example.js')]);
    assert.equal(code, 0, output);
  });

  it('refuse a member the entry point does not have, and an argument of the wrong type', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'trainmem-types-'));
    try {
      const misuse = join(folder, 'misuse.js');
      await writeFile(
        misuse,
        'window.trainmem.load().then((trainmem) => {\n' +
          '  trainmem.estimat(trainmem.defaultSetup);\n' +
          "  trainmem.formatBytes('165 GB');\n" +
          '});\n',
      );
      const { code, output } = await typeCheck([misuse]);
      assert.notEqual(code, 0);
      assert.match(output, /Property 'estimat' does not exist/);
      assert.match(output, /'string' is not assignable to parameter of type 'number'/);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('name every member of the estimator, and no other', async () => {
    const text = await readFile(declaration, 'utf8');
    const api = /type Api = \{([\s\S]*?)\n {4}\};/.exec(text)[1];
    const declared = [...api.matchAll(/^ {6}(\w+)[(:?]/gm)].map((match) => match[1]);
    assert.deepEqual([...declared].sort(), Object.keys(estimator).sort());
  });
});
