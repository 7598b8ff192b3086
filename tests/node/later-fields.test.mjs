// A setup written before a field existed (the table's defaultedInApi) gets the field's default,
// in the layout too: an older caller's estimate stays what it was.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { before, describe, it } from 'node:test';
import { makeEstimator } from '../../web/src/estimator.js';

const require = createRequire(import.meta.url);

describe('setups written before a field existed', () => {
  let estimator;

  before(async () => {
    const core = await require('../../build-wasm/trainmem-full.js')({
      wasmBinary: readFileSync('build-wasm/trainmem-full.wasm'),
    });
    estimator = makeEstimator(core, () => Promise.reject(new Error('not needed')));
  });

  it("gets the layout's expert and uneven-stage fields' defaults", () => {
    const setup = { ...estimator.defaultSetup, modelId: 'llama3-70b' };
    const {
      expertParallel,
      expertTensorParallel,
      pipelineFirstStageLayers,
      pipelineLastStageLayers,
      ...older
    } = { ...setup.layout, pipelineParallel: 4, dataParallel: 2 };
    assert.deepEqual(
      [expertParallel, expertTensorParallel, pipelineFirstStageLayers, pipelineLastStageLayers],
      [1, 0, 0, 0],
    );
    const written = estimator.estimate({ ...setup, layout: older });
    assert.equal(written.ok, true, written.message);
    const current = estimator.estimate({
      ...setup,
      layout: { ...setup.layout, pipelineParallel: 4, dataParallel: 2 },
    });
    assert.equal(written.bytes.totalBytes, current.bytes.totalBytes);
  });

  it('reads uneven stages given in the layout', () => {
    const setup = { ...estimator.defaultSetup, modelId: 'deepseek-v3' };
    const layout = {
      ...setup.layout,
      pipelineParallel: 8,
      pipelineFirstStageLayers: 6,
      pipelineLastStageLayers: 7,
    };
    const estimate = estimator.estimate({ ...setup, layout });
    assert.equal(estimate.ok, true, estimate.message);
    assert.equal(estimate.mostLoadedStage, 'middle');
    const refused = estimator.estimate({ ...setup, layout: { ...layout, pipelineFirstStageLayers: 5 } });
    assert.equal(refused.ok, false);
    assert.equal(refused.invalidField, 'pp-first-layers');
  });
});
