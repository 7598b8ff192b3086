// The exploration views live in the full module (trainmem-full.js), not in the first view's
// trainmem.wasm: the estimator's members for them answer with promises, in the same words and with
// the same Status as the rest of the API (here two instances of the module, as a page's estimator
// over one and its views over another would be), and a refused setup is refused without loading
// anything.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { before, describe, it } from 'node:test';
import { makeEstimator } from '../../web/src/estimator.js';

const require = createRequire(import.meta.url);

describe('the exploration views, from the on-demand module', () => {
  let core;
  let module;
  let estimator;
  let loads = 0;

  before(async () => {
    core = await require('../../build-wasm/trainmem-full.js')({
      wasmBinary: readFileSync('build-wasm/trainmem-full.wasm'),
    });
    module = await require('../../build-wasm/trainmem-full.js')({
      wasmBinary: readFileSync('build-wasm/trainmem-full.wasm'),
    });
    estimator = makeEstimator(core, () => {
      loads += 1;
      return Promise.resolve({ module });
    });
  });

  it("answers with promises, their Status the estimator's own, nested estimates too", async () => {
    const setup = estimator.defaultSetup;
    const savings = await estimator.savings(setup);
    assert.equal(savings.ok, true);
    assert.equal(savings.status, core.Status.OK);
    assert.equal(savings.baseline.answer.status, core.Status.OK);
    assert.ok(savings.savings.every((saving) => saving.estimate.answer.status === core.Status.OK));
    assert.equal(savings.baseline.bytes.totalBytes, estimator.estimate(setup).bytes.totalBytes);

    const fewest = await estimator.fewestDevices(setup, 4);
    assert.equal(fewest.ok, true);
    assert.equal(fewest.fewestDevices, 2); // 165.0 GB, on 80 GB devices with 10% kept free
    assert.equal(fewest.layouts[0].numDevices, 2);
    assert.ok(fewest.layouts.length > 0 && fewest.layouts.length <= 4);
    assert.equal(fewest.costs.length, fewest.layouts.length);

    const map = await estimator.fitMap(setup);
    assert.equal(map.ok, true);
    assert.equal(map.cells.length, map.sequenceLengths.length * map.microBatchSequences.length);

    const { points, peakIndex } = await estimator.timeline(setup);
    assert.equal(points[peakIndex].bytes, estimator.estimate(setup).bytes.totalBytes);

    const terms = await estimator.explain(setup);
    assert.ok(terms.some((term) => term.term === 'activations' || /ctivation/.test(term.label)));
    const tensors = await estimator.savedTensors({ ...setup, activationModel: 'llama-block' });
    assert.equal(tensors.bytesPerToken, 139400);
  });

  it("plans DeepSeek-V3's experts: the fewest devices' search leads with expert parallelism", async () => {
    const search = await estimator.fewestDevices({ ...estimator.defaultSetup, modelId: 'deepseek-v3' }, 8);
    assert.equal(search.ok, true);
    assert.equal(search.fewestDevices, 152);
    assert.ok(search.layouts[0].setup.layout.expertParallel > 1);
    assert.ok(search.layouts.some((layout) => layout.numDevices === 152));
  });

  it('refuses a setup the API refuses, without loading the module', async () => {
    const before = loads;
    const refused = await estimator.savings({ ...estimator.defaultSetup, sequenceLength: 8192.7 });
    assert.deepEqual(
      [refused.ok, refused.status, refused.message, refused.invalidField],
      [false, core.Status.INVALID_INPUT, 'sequenceLength must be a whole number; it is 8192.7.', 'setup'],
    );
    assert.deepEqual(await estimator.explain({ ...estimator.defaultSetup, recompute: 'sometimes' }), []);
    assert.equal(loads, before);
    // The core's own refusal comes through in its words.
    const tooFew = await estimator.fitMap({ ...estimator.defaultSetup, modelId: 'llama3-7b' });
    assert.equal(tooFew.ok, false);
    assert.equal(tooFew.status, core.Status.INVALID_INPUT);
    assert.match(tooFew.message, /^Model 'llama3-7b' is not known/);
  });

  it('rejects when the module cannot load, and keeps the rest of the estimator working', async () => {
    const offline = makeEstimator(core, () => Promise.reject(new Error('trainmem-full.js did not load')));
    await assert.rejects(offline.savings(offline.defaultSetup), /trainmem-full\.js did not load/);
    await assert.rejects(offline.timeline(offline.defaultSetup), /did not load/);
    assert.equal(offline.estimate(offline.defaultSetup).ok, true);
  });
});
