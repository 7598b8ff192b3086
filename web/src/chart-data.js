// What the two charts draw, taken out of the core's workshop view as plain data: the bars, the
// curves, the lines and every axis tick. The page draws it as it changes; the build writes the
// plate's default view into index.html as this same data, so that the charts show before the
// WebAssembly arrives (scripts/build-web.mjs). The figures are the core's; here they are only
// picked out and placed on axes.
import { deviceTerms } from './terms.js';

/** The steps an axis moves in, as multiples of a power of ten. */
const NICE_STEPS = [1, 2, 2.5, 5, 10];
const BREAKDOWN_TICKS = 9; // at most, from zero to the top
const BREAKDOWN_HEADROOM = 1.1;
const LOG_STEPS = [1, 2, 5];
const LOG_TICKS = 8; // at most; beyond it, powers of ten alone
/** The activation axis's margin, as a factor, below and above the curves and the line. */
const LOG_MARGIN = 1.6;

/** Ticks from 0 in a round step, the last at or above `top`, at most BREAKDOWN_TICKS of them. */
export function linearTicks(top) {
  const rough = top / (BREAKDOWN_TICKS - 1);
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = power * NICE_STEPS.find((nice) => nice * power >= rough);
  const count = Math.ceil(top / step);
  return Array.from({ length: count + 1 }, (_, index) => index * step);
}

/** The 1-2-5 values from `low` to `high` (powers of ten alone when there would be too many). */
export function logTicks(low, high) {
  const values = [];
  for (let power = Math.floor(Math.log10(low)); 10 ** power <= high; power += 1) {
    for (const step of LOG_STEPS) {
      const value = step * 10 ** power;
      if (value >= low && value <= high) values.push(value);
    }
  }
  return values.length > LOG_TICKS ? values.filter((value) => Number.isInteger(Math.log10(value))) : values;
}

function chosenActivations({ estimate, activationCurve }) {
  const point = activationCurve.find((candidate) => candidate.tokens === estimate.tokensPerMicroBatch);
  if (!point) return estimate.bytes.activationsBytes;
  return estimate.setup.flashAttention ? point.flashAttentionBytes : point.withoutFlashAttentionBytes;
}

/**
 * The charts' data for a workshop view, with the pinned estimate (the compare panel's) standing
 * to the left of the current one; `terms` is the core's table of terms (estimator.terms), and
 * `barLabels` the two bars' labels while one is pinned (each an array of lines).
 */
export function chartData(view, pinned, terms, barLabels = null) {
  if (!terms?.length) throw new TypeError('chartData needs the core’s table of terms (estimator.terms)');
  const { estimate, activationCurve } = view;
  const estimates = pinned ? [pinned, estimate] : [estimate];
  // The bars' terms: the core's table's device terms, in its order, those always listed and those
  // held only sometimes where some bar holds them. A term not drawn costs Chart.js a dataset on
  // every redraw, so it gets none.
  const shownTerms = deviceTerms(terms).filter(
    (term) =>
      !(term.listedWhenHeld || term.countedBy) || estimates.some((shown) => shown.bytes[term.apiKey] > 0),
  );
  const bars = estimates.map((shown, index) => ({
    label: barLabels?.[index] ?? null,
    modelName: shown.modelName,
    numDevices: shown.numDevices,
    // The pipeline stage asked for, counted from 1, where it is not the most loaded; 0 otherwise.
    stageAsked: shown.stage.index !== shown.mostLoaded.index ? shown.stage.index + 1 : 0,
    bytes: shownTerms.map((term) => shown.bytes[term.apiKey]),
  }));
  // The device's line: what a fit is judged against (the printed capacity under the ideal stack;
  // under a training stack the memory PyTorch reports for the device, where known).
  const capacity = estimate.limitBytes;
  const top = Math.max(capacity, ...bars.map((bar) => bar.bytes.reduce((sum, bytes) => sum + bytes, 0)));

  // The right chart's line: what the device has left for activations at each micro-batch once it
  // holds everything else at it (the logits grow with the tokens); none where that alone exceeds it.
  const curve = activationCurve.map((point) => ({
    tokens: point.tokens,
    flash: point.flashAttentionBytes,
    noFlash: point.withoutFlashAttentionCounted ? point.withoutFlashAttentionBytes : null,
    room: point.roomBytes > 0 ? point.roomBytes : null,
  }));
  const room = estimate.activationRoomBytes > 0 ? estimate.activationRoomBytes : null;
  const drawn = curve.flatMap((point) => [
    point.flash,
    ...(point.noFlash === null ? [] : [point.noFlash]),
    ...(point.room ? [point.room] : []),
  ]);
  const low = Math.min(...drawn) / LOG_MARGIN;
  const high = Math.max(...drawn) * LOG_MARGIN;

  return {
    // Each bar's term: its id (its colour is the page's) and its label.
    terms: shownTerms.map(({ id, label }) => ({ id, label })),
    deviceName: estimate.device.name,
    capacityBytes: capacity,
    capacityReported: capacity !== estimate.device.capacityBytes,
    // Under LoRA the terms mix a frozen base with adapters: no one figure per parameter to quote.
    perParameter: estimate.setup.loraRank > 0 ? {} : estimate.bytesPerParameter,
    bars,
    // A little above the tallest bar or the device's line, so that the line's label fits over it.
    breakdownTicks: linearTicks(top * BREAKDOWN_HEADROOM),
    curve,
    // Ticks on whole micro-batches (1, 4, 8, 12, 16 sequences), not on round decimals.
    tokenTicks: activationCurve
      .filter((point, index) => index === 0 || point.microBatchSequences % 4 === 0)
      .map((point) => point.tokens),
    activationRange: { low, high },
    activationTicks: logTicks(low, high),
    roomBytes: room,
    // The ring sits on the curve at the chosen micro-batch: the activations as counted, which a
    // training stack's peak may catch part-freed (the readout says what it holds then).
    choice: {
      flashAttention: estimate.setup.flashAttention,
      tokens: estimate.tokensPerMicroBatch,
      bytes: chosenActivations(view),
    },
  };
}
