// The JavaScript entry point's declaration as the build writes it (dist/trainmem-api.d.ts, its setup
// types made from the core's table of settings): the example page type-checks against it, a misuse
// does not, and it names every member the estimator has and no other.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { makeEstimator } from '../../web/src/estimator.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const declaration = join(root, 'dist', 'trainmem-api.d.ts');

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

/**
 * A value as a TypeScript literal: embind's enum values (a Status, a setting's kind; `unknown` in
 * the declaration) as null, and arrays cut to their first two items (their type is the same).
 */
const literal = (value) =>
  JSON.stringify(value, (key, item) => {
    if (Array.isArray(item)) return item.slice(0, 2);
    if (item && typeof item === 'object' && Object.getPrototypeOf(item) !== Object.prototype) return null;
    return item;
  });

describe("the JavaScript entry point's types", () => {
  let estimator;
  before(async () => {
    const built = (file) => join(root, 'build-wasm', file);
    // As window.trainmem.load() gives it: the full module, whose views answer from itself.
    const create = createRequire(import.meta.url)(built('trainmem-full.js'));
    const module = await create({ wasmBinary: await readFile(built('trainmem-full.wasm')) });
    estimator = makeEstimator(module, () => Promise.resolve({ module }));
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

  it("describe the estimator's real answers field by field, none missing and none extra", async () => {
    const api = estimator;
    const setup = api.defaultSetup;
    const llamaBlock = { ...setup, activationModel: 'llama-block' };
    // Each value typed as the declaration says: a field it lacks, or one it does not name, fails.
    const values = {
      "Trainmem.Api['defaultSetup']": setup,
      "Trainmem.Api['presets']": api.presets,
      "Trainmem.Api['settings']": api.settings,
      "Trainmem.Api['terms']": api.terms,
      "Trainmem.Api['choices']": api.choices,
      "OkOf<ReturnType<Trainmem.Api['estimate']>>": api.estimate(setup),
      "ReturnType<Trainmem.Api['estimate']>": api.estimate({ ...setup, sequenceLength: -1 }),
      "OkOf<ReturnType<Trainmem.Api['workshopView']>>": api.workshopView(setup, 16),
      "OkOf<ReturnType<Trainmem.Api['changeSetting']>>": api.changeSetting(setup, 'dp', '8', 16),
      "OkOf<ReturnType<Trainmem.Api['microBatchFromTokens']>>": api.microBatchFromTokens(8192, 8192, 16),
      "Awaited<ReturnType<Trainmem.Api['explain']>>": await api.explain(setup),
      "Awaited<ReturnType<Trainmem.Api['savedTensors']>>": await api.savedTensors(llamaBlock),
      "Awaited<ReturnType<Trainmem.Api['measured']>>": await api.measured(),
      'OkOf<Trainmem.FitSearch>': await api.fewestDevices(setup, 2),
      "Awaited<ReturnType<Trainmem.Api['timeline']>>": await api.timeline({ ...setup, stack: 'megatron' }),
      "OkOf<Awaited<ReturnType<Trainmem.Api['savings']>>>": await api.savings(setup),
      "OkOf<Awaited<ReturnType<Trainmem.Api['fitMap']>>>": await api.fitMap(setup),
    };
    for (const [type, value] of Object.entries(values)) {
      if (type.startsWith('OkOf')) assert.equal(value.ok, true, `${type}: ${value.message}`);
    }
    const folder = await mkdtemp(join(tmpdir(), 'trainmem-types-'));
    try {
      const answers = join(folder, 'answers.ts');
      await writeFile(
        answers,
        'type OkOf<T> = Extract<T, { ok: true }>;\n' +
          Object.entries(values)
            .map(([type, value], index) => `export const value${index}: ${type} = ${literal(value)};`)
            .join('\n') +
          '\n',
      );
      const { code, output } = await typeCheck([answers]);
      assert.equal(code, 0, output);
      // And the check can fail: a field the declaration does not name, and one it names, missing.
      const { modelName, ...estimate } = api.estimate(setup);
      assert.ok(modelName);
      await writeFile(
        answers,
        "type Answer = Extract<ReturnType<Trainmem.Api['estimate']>, { ok: true }>;\n" +
          `export const extra: Answer = ${literal({ ...estimate, modelName, extra: 1 })};\n` +
          `export const missing: Answer = ${literal(estimate)};\n`,
      );
      const wrong = await typeCheck([answers]);
      assert.notEqual(wrong.code, 0);
      assert.match(wrong.output, /'"?extra"?' does not exist in type/);
      assert.match(wrong.output, /Property 'modelName' is missing/);
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
