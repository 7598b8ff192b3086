// The first view's module (trainmem.js): the plate's view alone, answered as the full module
// answers it. It carries the plate's settings and nothing beyond them, and none of the exploration
// views; over every preset, micro-batch and attention its view is the full module's, figure for
// figure.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { before, describe, it } from 'node:test';

const require = createRequire(import.meta.url);
const load = (name) =>
  require(`../../build-wasm/${name}.js`)({ wasmBinary: readFileSync(`build-wasm/${name}.wasm`) });

describe("the first view's module", () => {
  let plate;
  let full;
  before(async () => {
    [plate, full] = await Promise.all([load('trainmem'), load('trainmem-full')]);
  });

  it("carries the plate's settings alone, and none of the exploration views", () => {
    const ids = plate.settings().map((setting) => setting.id);
    assert.deepEqual(ids, ['model', 'seq-len', 'tokens', 'micro-batch', 'flash-attention', 'logits', 'loss']);
    assert.deepEqual(
      ids,
      full
        .settings()
        .filter((setting) => setting.plate)
        .map((setting) => setting.id),
      "the full table's plate rows, in its order",
    );
    assert.equal(plate.defaultSetup().layout, undefined, 'no layout: the plate has one device');
    for (const name of ['explainEstimate', 'savedTensors', 'memoryTimeline', 'rankSavings', 'fitMap']) {
      assert.equal(plate[name], undefined, name);
      assert.equal(typeof full[name], 'function', name);
    }
  });

  it("gives the full module's view, figure for figure, over every preset", () => {
    // The setups' own fields differ (the plate's has its settings alone); the figures may not. The
    // full module's estimate also carries what only its settings fill (a stack's peaks, the host
    // offloading fills, a LoRA base: estimate_types.hpp), which the
    // plate's leaves out: each is what the plate's view implies (no host but the device's own, the
    // idealised step's peaks its total).
    const fullOnly = (estimate) => ({
      baseLinearBytesPerParameter: 0,
      hostDevices: estimate.hostDevices, // read only beside a host's capacity, which is 0
      hostNodeBytes: 0,
      hostCapacityBytes: 0,
      hostFits: true,
      peakAllocatedBytes: estimate.bytes.totalBytes,
      peakReservedBytes: estimate.bytes.totalBytes,
    });
    const figures = ({ estimate: { setup, ...estimate }, activationCurve, logitsLeftOut }, full) => {
      if (full) {
        for (const [key, implied] of Object.entries(fullOnly(estimate))) {
          assert.equal(estimate[key], implied, key);
          delete estimate[key];
        }
      }
      return JSON.stringify({ estimate, activationCurve, logitsLeftOut, texts: setup.modelId });
    };
    let compared = 0;
    for (const preset of plate.presetModels()) {
      for (const microBatchSequences of [1, 5, 16]) {
        for (const flashAttention of [true, false]) {
          const patch = { modelId: preset.id, microBatchSequences, flashAttention };
          const ours = plate.workshopView({ ...plate.defaultSetup(), ...patch }, 16);
          const theirs = full.workshopView({ ...full.defaultSetup(), ...patch }, 16);
          assert.equal(
            figures(ours),
            figures(theirs, true),
            `${preset.id} ${microBatchSequences} ${flashAttention}`,
          );
          compared += 1;
        }
      }
    }
    assert.equal(compared, plate.presetModels().length * 6);
  });
});
