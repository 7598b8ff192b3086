// The words beside the charts: the readout sentence, the figures the plate's prose quotes, and the
// embedded view. Every number comes from the core.
import { $, put } from './dom.js';
import { formatPerParameter, plural } from './format.js';

/** The figures the plate's prose quotes, by name: fixed configurations, estimated by the core. */
export function plateFigures(estimator) {
  const plate = (patch) => estimator.estimate({ ...estimator.defaultSetup, ...patch });
  const eightB = plate({});
  const eightBNoFlash = plate({ flashAttention: false });
  const fourOFiveB = plate({ modelId: 'llama3-405b' });
  // The Llama block's figure needs the activation models' setting, which the full module alone has.
  const llamaBlock = estimator.full
    ? {
        'llama-block-activations-8b': estimator.formatBytes(
          plate({ activationModel: 'llama-block' }).bytes.activationsBytes,
        ),
      }
    : {};
  return {
    ...llamaBlock,
    'params-8b': estimator.formatParameters(eightB.numParameters),
    'states-8b': estimator.formatBytes(eightB.bytes.modelStatesBytes),
    'activations-8b': estimator.formatBytes(eightB.bytes.activationsBytes),
    'total-8b': estimator.formatBytes(eightB.bytes.totalBytes),
    'worth-8b': estimator.formatWorth(eightB.devicesWorth),
    'total-8b-no-flash': estimator.formatBytes(eightBNoFlash.bytes.totalBytes),
    'states-405b': estimator.formatBytes(fourOFiveB.bytes.modelStatesBytes),
    'worth-405b': fourOFiveB.devicesWorth.toFixed(0),
    'devices-per-node': estimator.formatCount(estimator.devicesPerNode),
    'min-tokens-per-shard': estimator.formatCount(estimator.minTokensPerContextShard),
  };
}

/** Writes plateFigures() into the [data-figure] elements inside `root` (the whole page, or Go further). */
export function fillPlateFigures(figures, root = document) {
  for (const element of root.querySelectorAll('[data-figure]')) {
    element.textContent = figures[element.dataset.figure] ?? '—';
  }
}

/** "a, b and c". */
function listed(parts) {
  return parts.length < 2 ? parts.join('') : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

/**
 * " as PyTorch reports it" where a fit is judged against the memory PyTorch reports for the device
 * (a training stack's estimate, estimate.limitBytes), not the capacity as printed; "" otherwise.
 */
function reportedWords(estimate) {
  return estimate.limitBytes !== estimate.device.capacityBytes ? ' as PyTorch reports it' : '';
}

/**
 * What the readout leaves out, with its size: the output layer's logits and loss, where they are
 * not counted ('' where they are). `leftOut` is the view's logitsLeftOut.
 */
export function describeLeftOut(estimator, leftOut) {
  if (!(leftOut?.bytes > 0)) return '';
  const loss = estimator.choices.loss.find((choice) => choice.id === leftOut.loss);
  return (
    ` Not counted: the output layer's logits and loss, ${estimator.formatBytes(leftOut.bytes)} more ` +
    `as a run computes them (loss: ${loss.name}).`
  );
}

/**
 * A model's multi-token-prediction modules, where they are not trained: said, with their count,
 * and the way to train them only where the setup can (full training under a stack that builds
 * them: the core refuses them under LoRA and transformers' stacks).
 */
export function describeMtp(estimator, estimate) {
  if (!(estimate.mtpParameters > 0) || estimate.setup.mtp) return '';
  const trainable = estimate.setup.loraRank === 0 && ['ideal', 'megatron'].includes(estimate.setup.stack);
  return (
    ` Not trained: ${estimate.modelName}'s multi-token-prediction modules ` +
    `(${estimator.formatParameters(estimate.mtpParameters)} parameters), which transformers does not build` +
    (trainable ? '; tick "Multi-token prediction" to train them as DeepSeek and Megatron-LM do.' : '.')
  );
}

/** A multimodal model's vision tower: frozen or trained, and what of it is not counted. */
export function describeVision(estimator, estimate) {
  if (!(estimate.visionParameters > 0)) return '';
  const count = estimator.formatParameters(estimate.visionParameters);
  return estimate.setup.trainVision
    ? ` Its vision tower and projector (${count} parameters) train with the rest; images' activations are not counted.`
    : ` Its vision tower and projector (${count} parameters) are held frozen, their weights alone; images' activations are not counted.`;
}

/** A sequence past a rotary model's max_position_embeddings: said, since it is counted as if it ran. */
export function describePositions(estimator, estimate) {
  const { maxPositions, setup } = estimate;
  if (!(maxPositions > 0) || setup.sequenceLength <= maxPositions) return '';
  return (
    ` Beyond its positions: ${estimate.modelName} takes sequences of up to ` +
    `${estimator.formatCount(maxPositions)} tokens (max_position_embeddings); one of ` +
    `${estimator.formatCount(setup.sequenceLength)} needs its RoPE extended first, and is counted as if it were.`
  );
}

/**
 * The readout: the same numbers as the charts, in a sentence, its terms the core's table's, and
 * what it leaves out (the view's logitsLeftOut).
 */
export function describe(estimator, estimate, leftOut) {
  const { bytes, setup, device } = estimate;
  const format = estimator.formatBytes;
  const onDevice = (part) => estimator.terms.filter((term) => term.onDevice && term.part === part);
  const said = (term) => `${format(bytes[term.apiKey])} ${term.phrase}`;
  // A term a switch counts (the logits) is said while the switch is on (never in the first
  // view's module, whose setups hold the plate's settings alone).
  const counted = (term) => !term.countedBy || estimator.settingText(setup, term.countedBy) === 'on';
  const stack = estimate.stackTerms.length > 0;
  // A pipeline stage before the last holds no logits: they are the last stage's to say.
  const beforeLast = estimate.stage.role === 'first' || estimate.stage.role === 'middle';
  const passes = [...onDevice('activations'), ...(beforeLast ? [] : onDevice('logits'))].filter(counted);
  // Under a stack the terms are those held at the step's peak: where none of the passes' is, the
  // peak is the optimiser's step, and the sentence says so rather than "0.0 GB of activations".
  const atStep = stack && passes.every((term) => !(bytes[term.apiKey] > 0));
  // What the stack holds beside them, the parts it holds at all (no "0.0 GB of the stack's own
  // buffers" where it has none).
  const besides = stack ? onDevice('stack').filter((term) => bytes[term.apiKey] > 0) : [];
  const activations =
    (atStep
      ? `none of its activations${passes.length > 1 ? ' or logits' : ''} at the step's peak, ` +
        // A peak without gradients is an RL step's generation (vLLM woken), before the passes.
        (bytes.gradientsBytes > 0
          ? "the optimiser's step, after the backward pass has freed them,"
          : "the rollout's generation,")
      : passes.map(said).join(' and ')) +
    ` for ${estimator.formatCount(estimate.tokensPerMicroBatch)} tokens per micro-batch ` +
    `(${plural(setup.microBatchSequences, 'sequence')}), FlashAttention ${setup.flashAttention ? 'on' : 'off'}.` +
    (besides.length > 0 ? ` Beside them, at the step's peak: ${listed(besides.map(said))}.` : '');
  const lora = setup.loraRank > 0;
  // A frozen vision tower holds its weights alone, beside the trained parameters' full states.
  const frozenVision = !lora && estimate.visionParameters > 0 && !setup.trainVision;
  const counts = lora
    ? ` (a frozen base of ${estimator.formatParameters(estimate.numParameters)} parameters, ` +
      `${estimator.formatCount(estimate.trainableParameters)} of LoRA's trainable)`
    : frozenVision
      ? ` (${formatPerParameter(estimate.bytesPerParameter.total)} bytes × ` +
        `${estimator.formatParameters(estimate.trainableParameters)} trained parameters and ` +
        `${formatPerParameter(estimate.bytesPerParameter.weights)} × ` +
        `${estimator.formatParameters(estimate.visionParameters)} frozen)`
      : ` (${formatPerParameter(estimate.bytesPerParameter.total)} bytes × ` +
        `${estimator.formatParameters(estimate.numParameters)} parameters` +
        (setup.optimizerInBackward
          ? ` and the largest one's gradient, ${format(bytes.gradientsBytes)}, stepped in the backward pass)`
          : // --fp8-param-gather: the linear weights are FP8 parameters, counted with the FP8 term.
            setup.fp8ParamGather === true
            ? `, less the ${formatPerParameter(estimate.bytesPerParameter.weights)} bytes of BF16 weights ` +
              'the FP8 linear weights do not keep)'
            : ')');
  // What is held alongside the states through the step or its passes, where some is.
  const alongside = [...onDevice('alongside'), ...onDevice('inPasses')]
    .filter((term) => bytes[term.apiKey] > 0)
    .map((term) => `, ${said(term)},`)
    .join('');
  const states = `${format(bytes.modelStatesBytes)} of model states`;
  if (estimate.numDevices === 1) {
    return (
      `${estimate.modelName} needs ${format(bytes.totalBytes)} to train on one device: ${states}` +
      `${counts}${alongside} and ${activations} ` +
      `That is ${estimator.formatWorth(estimate.devicesWorth)} ${device.shortName}s' worth of memory, ` +
      `at ${estimator.formatBytesShort(estimate.limitBytes)} each${reportedWords(estimate)}.` +
      afterwords(estimator, estimate, leftOut)
    );
  }
  const headroom =
    setup.headroomPercent > 0 ? ` with ${estimator.formatPercent(setup.headroomPercent)} kept free` : '';
  // A stage asked for that is not the most loaded: the terms are its device's, the fit the most
  // loaded's (the core's note says which).
  const asked = estimate.stage.index !== estimate.mostLoaded.index;
  const subject = asked ? 'Its most loaded device' : 'It';
  const one = `one ${device.name}${reportedWords(estimate)}`;
  const verdict = estimate.fits
    ? `${subject} fits in ${one}${headroom}, using ${estimator.formatShare(estimate.devicesWorth)} of its memory.`
    : `${subject} does not fit in ${one}${headroom}: it needs ${estimator.formatWorth(estimate.devicesWorth)} times its memory` +
      // Under one device's worth, it is the headroom that keeps it out: say so.
      (estimate.devicesWorth <= 1
        ? `, more than the ${estimator.formatBytes(estimate.usableBytes)} left usable.`
        : '.');
  return (
    `Spread over ${estimator.formatLayout(estimate)}, ${estimate.modelName} needs ` +
    `${format(bytes.totalBytes)} ` +
    (asked
      ? `on the pipeline stage asked for (${estimate.stage.index + 1} of ${setup.layout.pipelineParallel}): `
      : 'on its most loaded device: ') +
    `${states}${alongside} and ${activations} ${verdict}` +
    afterwords(estimator, estimate, leftOut)
  );
}

/** What the stack did to the setup before it ran it (Megatron-LM's padded vocabulary…), in the core's words. */
export function describeNotes(estimate) {
  return estimate.notes.map((note) => ` ${note}`).join('');
}

/** The sentences after the readout's: what it leaves out, and what the stack changed. */
function afterwords(estimator, estimate, leftOut) {
  return (
    describeLeftOut(estimator, leftOut) +
    describeMtp(estimator, estimate) +
    describeVision(estimator, estimate) +
    describePositions(estimator, estimate) +
    describeNotes(estimate)
  );
}

/** Offloading: what the host holds beside the device, or '' when nothing is offloaded. */
export function describeHost(estimator, estimate) {
  const { host, bytes } = estimate;
  if (!(host.totalBytes > 0)) return '';
  const format = estimator.formatBytes;
  const held = estimator.terms.filter((term) => term.onHost && host[term.apiKey] > 0);
  const moved = held.filter((term) => term.part !== 'host');
  const own = held.filter((term) => term.part === 'host');
  const said = (term) => `${format(host[term.apiKey])} ${term.phrase}`;
  const node =
    estimate.hostCapacityBytes > 0
      ? ` Its node's ${plural(estimate.hostDevices, 'device')} ${estimate.hostDevices === 1 ? 'needs' : 'need'} ` +
        `${format(estimate.hostNodeBytes)} of the host's ` +
        `${format(estimate.hostCapacityBytes)}: ${estimate.hostFits ? 'the host holds it' : 'the host does not hold it'}.`
      : '';
  return (
    `Host memory: ${format(host.totalBytes)} beside the device's ${format(bytes.totalBytes)}. ` +
    `Moved off the device: ${moved.map(said).join(', ')}${own.map((term) => `, and ${said(term)}`).join('')}.` +
    node
  );
}

/** Under a training stack: the peaks PyTorch would report and what the stack holds, or ''. */
export function describeStack(estimator, estimate) {
  const terms = estimate.stackTerms ?? [];
  if (terms.length === 0) return '';
  const format = estimator.formatBytes;
  const { bytes } = estimate;
  // Terms under 0.05 GB would read "0.0 GB": the arithmetic and the numbers table list them.
  const held = terms
    .filter((term) => term.bytes >= 0.05e9)
    .map(
      (term) => `${term.label} ${format(term.bytes)}${term.inAllocator ? '' : ' (outside the allocator)'}`,
    );
  return (
    `Peak allocated ${format(estimate.peakAllocatedBytes)}, peak reserved ` +
    `${format(estimate.peakReservedBytes)} (what torch.cuda.max_memory_allocated and ` +
    `max_memory_reserved report; a published "memory" figure is usually the reserved one). ` +
    `The caching allocator keeps ${format(bytes.allocatorCacheBytes)} reserved beyond the allocated ` +
    `peak. At the peak the stack holds: ${held.join('; ')}.`
  );
}

/**
 * What the right chart's dashed line, the room for activations, is in words (or why there is
 * none), from the figures that make it: the usable memory less everything held beside them.
 */
export function describeRoom(estimator, estimate) {
  const { device, bytes, setup } = estimate;
  const format = estimator.formatBytes;
  const parts = [`${format(bytes.modelStatesBytes)} of model states`];
  if (setup.logits) parts.push(`${format(bytes.logitsBytes)} of logits`);
  const besides = format(estimate.heldBesidesBytes);
  if (estimate.heldBesidesBytes > 0 && besides !== format(0)) parts.push(`${besides} more besides`);
  const beside = parts.length === 1 ? parts[0] : `${format(estimate.heldBytes)} (${listed(parts)})`;
  const usable =
    `${format(estimate.usableBytes)} usable of one ${device.name}${reportedWords(estimate)}` +
    (estimate.headroomPercent > 0
      ? ` with ${estimator.formatPercent(estimate.headroomPercent)} kept free`
      : '');
  return estimate.activationRoomBytes > 0
    ? `Dashed line: what is left for activations of the ${usable}, once it holds ${beside}: ` +
        `${format(estimate.activationRoomBytes)}` +
        (setup.logits ? ' here, less as the logits grow with the tokens.' : '.')
    : `No room for activations: ${beside} exceed the ${usable}, so no micro-batch leaves room for activations.`;
}

/** The left chart's title. */
export const breakdownTitle = (estimate) =>
  estimate.numDevices === 1
    ? 'Memory to train on one device'
    : estimate.stage.index !== estimate.mostLoaded.index
      ? `Memory on pipeline stage ${estimate.stage.index + 1}'s device`
      : 'Memory on the most loaded device';

/**
 * The caption's words written for the plate's view stand while the setup is within it (every
 * setting beyond the plate's at its default) and give way to general ones beyond it; that one
 * H100 leaves no room, only while the right chart shows none (not for Llama 3.2 1B).
 */
function showCaption(estimator, { estimate, settingTexts }) {
  // The view's own texts of its settings: no call into the core a setting, on every drag step.
  const plateView = estimator.settings.every(
    (setting) => setting.plate || settingTexts[setting.id] === setting.defaultText,
  );
  for (const element of document.querySelectorAll('[data-plate-view]')) element.hidden = !plateView;
  for (const element of document.querySelectorAll('[data-beyond-plate]')) element.hidden = plateView;
  const noRoom = plateView && !(estimate.activationRoomBytes > 0);
  for (const element of document.querySelectorAll('[data-no-room]')) element.hidden = !noRoom;
}

/** Writes the readout, the left chart's title and the right chart's note for the view's estimate. */
export function showReadout(estimator, view) {
  const { estimate, logitsLeftOut } = view;
  showCaption(estimator, view);
  // Text is replaced only where it changed: a drag changes the readout alone.
  const show = (id, text) => put($(id), 'textContent', text);
  show('readout', describe(estimator, estimate, logitsLeftOut));
  const host = describeHost(estimator, estimate);
  show('host-readout', host);
  put($('host-readout'), 'hidden', !host);
  const stack = describeStack(estimator, estimate);
  show('stack-readout', stack);
  put($('stack-readout'), 'hidden', !stack);
  show('activations-note', describeRoom(estimator, estimate));
  show('breakdown-title', breakdownTitle(estimate));
}

/**
 * The theme a link or a host page asks for: the dark palette (dark.css, built into styles.css)
 * follows the reader's system setting unless the theme is light or dark. 'auto' leaves the page as
 * it is: touching it would restyle the whole page before the charts.
 */
export function applyTheme(theme) {
  if (theme !== 'auto') document.documentElement.dataset.theme = theme;
}

/** Embedded (?embed=1): only the workshop, and its height posted to the parent window. */
export function embed() {
  document.documentElement.classList.add('embed');
  const postHeight = () => {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    window.parent.postMessage({ type: 'trainmem:height', height }, '*');
  };
  new ResizeObserver(postHeight).observe(document.documentElement);
}
