// What the charts draw, taken out of the core's view (web/src/chart-data.js): the axes' ticks and
// the bars, curves and lines, checked on the core's own view of the plate's default.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chartData, linearTicks, logTicks } from '../../web/src/chart-data.js';
import { TERM_STYLES } from '../../web/src/terms.js';
import { loadCoreForNode } from '../../scripts/first-view.mjs';

const GB = 1e9;

describe('the charts’ axes', () => {
  it('steps the memory axis from zero in a round step, at most nine ticks, the last over the top', () => {
    assert.deepEqual(
      linearTicks(181.5 * GB).map((bytes) => bytes / GB),
      [0, 25, 50, 75, 100, 125, 150, 175, 200],
    );
    assert.deepEqual(
      linearTicks(88 * GB).map((bytes) => bytes / GB),
      [0, 20, 40, 60, 80, 100],
    );
    for (const top of [1e6, 3.3e9, 72e9, 6.5e12, 9.9e15]) {
      const ticks = linearTicks(top);
      assert.ok(ticks.length <= 10 && ticks.at(-1) >= top, `${top}: ${ticks}`);
    }
  });

  it('puts the activation axis’s ticks on 1, 2 and 5 times a power of ten, or on powers alone when they crowd', () => {
    assert.deepEqual(
      logTicks(22.8 * GB, 9.7e12).map((bytes) => bytes / GB),
      [50, 100, 200, 500, 1000, 2000, 5000],
    );
    assert.deepEqual(logTicks(1e6, 1e12), [1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12]);
  });
});

describe('chartData', () => {
  let estimator;
  before(async () => {
    const built = (file) => fileURLToPath(new URL(`../../build-wasm/${file}`, import.meta.url));
    estimator = await loadCoreForNode(built('trainmem-full.js'), built('trainmem-full.wasm'));
  });

  it('stacks every term the estimate holds, so that the bar is the total', () => {
    const view = estimator.workshopView(estimator.defaultSetup, 16);
    const data = chartData(view, null, estimator.terms);
    assert.equal(data.bars.length, 1);
    // The plate's five terms: the logits are not counted, and nothing else is held.
    assert.deepEqual(
      data.terms.map((term) => term.id),
      ['weights', 'gradients', 'masterWeights', 'optimizerStates', 'activations'],
    );
    assert.equal(data.bars[0].bytes.length, 5);
    // Under torchtitan with the logits counted, the stack's terms and the logits join them.
    const stack = estimator.workshopView(
      {
        ...estimator.defaultSetup,
        stack: 'torchtitan',
        logits: true,
        loss: 'fp32-upcast',
        layout: { ...estimator.defaultSetup.layout, dataParallel: 8, zeroStage: 3 },
      },
      16,
    );
    assert.equal(stack.ok, true, stack.message);
    const held = chartData(stack, null, estimator.terms).terms.map((term) => term.id);
    for (const id of ['logits', 'framework', 'runtime', 'allocatorCache']) assert.ok(held.includes(id), id);
    assert.ok(!held.includes('fp8Weights') && !held.includes('dequantization'));
    assert.throws(() => chartData(view, null, []), /table of terms/);
    const sum = data.bars[0].bytes.reduce((total, bytes) => total + bytes, 0);
    assert.equal(sum, view.estimate.bytes.totalBytes);
    assert.ok(data.breakdownTicks.at(-1) >= Math.max(sum, data.capacityBytes));
  });

  it('draws a term either bar holds in both, the pinned one and the current one', () => {
    const plate = estimator.workshopView(estimator.defaultSetup, 16);
    const stack = estimator.workshopView({ ...estimator.defaultSetup, stack: 'megatron' }, 16);
    assert.equal(stack.ok, true, stack.message);
    assert.ok(stack.estimate.bytes.runtimeBytes > 0 && plate.estimate.bytes.runtimeBytes === 0);
    for (const [current, pinned] of [
      [plate, stack.estimate],
      [stack, plate.estimate],
    ]) {
      const data = chartData(current, pinned, estimator.terms);
      const runtime = data.terms.findIndex((term) => term.id === 'runtime');
      assert.ok(runtime >= 0, 'the runtime term is drawn');
      assert.deepEqual(
        data.bars.map((bar) => bar.bytes[runtime] > 0),
        [pinned === stack.estimate, current === stack],
      );
      data.bars.forEach((bar, index) =>
        assert.equal(
          bar.bytes.reduce((total, bytes) => total + bytes, 0),
          [pinned, current.estimate][index].bytes.totalBytes,
        ),
      );
    }
  });

  it('gives every term of the core’s table a colour and marks of its own on the page', () => {
    for (const term of estimator.terms) {
      const style = TERM_STYLES[term.id];
      assert.ok(style, `${term.id} has no colour in web/src/terms.js`);
      assert.match(style.color, /^#[0-9a-f]{6}$/);
    }
    // No two terms a device holds look alike.
    const looks = estimator.terms
      .filter((term) => term.onDevice)
      .map((term) => `${TERM_STYLES[term.id].color} ${TERM_STYLES[term.id].marks}`);
    assert.equal(new Set(looks).size, looks.length);
  });

  it('draws no room line when the model states alone fill the device, and one where they leave room', () => {
    const plate = chartData(estimator.workshopView(estimator.defaultSetup, 16), null, estimator.terms);
    assert.equal(plate.roomBytes, null);
    const spread = estimator.workshopView(
      {
        ...estimator.defaultSetup,
        layout: { ...estimator.defaultSetup.layout, dataParallel: 8, zeroStage: 3 },
      },
      16,
    );
    assert.equal(spread.ok, true, spread.message);
    const data = chartData(spread, null, estimator.terms);
    assert.equal(data.roomBytes, spread.estimate.activationRoomBytes);
    assert.ok(data.roomBytes > data.activationRange.low && data.roomBytes < data.activationRange.high);
  });

  it('keeps both curves and the ring inside the activation axis', () => {
    const data = chartData(estimator.workshopView(estimator.defaultSetup, 16), null, estimator.terms);
    for (const point of data.curve) {
      for (const bytes of [point.flash, point.noFlash]) {
        assert.ok(bytes > data.activationRange.low && bytes < data.activationRange.high);
      }
    }
    assert.equal(data.choice.bytes, data.curve[0].flash);
    assert.deepEqual(
      data.tokenTicks,
      [8192, 32768, 65536, 98304, 131072],
      'whole micro-batches: 1, 4, 8, 12 and 16 sequences',
    );
  });
});
