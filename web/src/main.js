// Wires the plate: controls -> state -> one call into the core -> charts, readout and tables.
import { createCharts, TERMS } from './charts.js';
import { loadEstimator } from './estimator.js';
import { formatPerParameter, formatWorth, plural } from './format.js';
import { DEFAULT_STATE, MAX_MICRO_BATCH_SEQUENCES, toSetup } from './state.js';

const $ = (id) => document.getElementById(id);

/** Builds a table body from rows of cell texts (never HTML). */
function fillTable(tbody, rows) {
  tbody.replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement('tr');
      cells.forEach((text, index) => {
        const cell = document.createElement(index === 0 ? 'th' : 'td');
        if (index === 0) cell.scope = 'row';
        cell.textContent = text;
        tr.append(cell);
      });
      return tr;
    }),
  );
}

/** The plate's prose quotes fixed configurations; their figures come from the core too. */
function fillPlateFigures(estimator) {
  const plate = (model, flashAttention) =>
    estimator.estimate(toSetup({ ...DEFAULT_STATE, model, flashAttention }, estimator.defaultSetup));
  const eightB = plate('llama3-8b', true);
  const eightBNoFlash = plate('llama3-8b', false);
  const fourOFiveB = plate('llama3-405b', true);
  const figures = {
    'params-8b': estimator.formatParameters(eightB.numParameters),
    'states-8b': estimator.formatBytes(eightB.bytes.modelStatesBytes),
    'activations-8b': estimator.formatBytes(eightB.bytes.activationsBytes),
    'total-8b': estimator.formatBytes(eightB.bytes.totalBytes),
    'worth-8b': formatWorth(eightB.devicesWorth),
    'total-8b-no-flash': estimator.formatBytes(eightBNoFlash.bytes.totalBytes),
    'states-405b': estimator.formatBytes(fourOFiveB.bytes.modelStatesBytes),
    'worth-405b': fourOFiveB.devicesWorth.toFixed(0),
  };
  for (const element of document.querySelectorAll('[data-figure]')) {
    element.textContent = figures[element.dataset.figure] ?? '—';
  }
}

function describe(estimator, estimate) {
  const { bytes, setup } = estimate;
  const format = estimator.formatBytes;
  return (
    `${estimate.modelName} needs ${format(bytes.totalBytes)} to train on one device: ` +
    `${format(bytes.modelStatesBytes)} of model states ` +
    `(${estimator.bytesPerParameter} bytes × ${estimator.formatParameters(estimate.numParameters)} parameters) ` +
    `and ${format(bytes.activationsBytes)} of activations for ` +
    `${estimator.formatCount(estimate.tokensPerMicroBatch)} tokens per micro-batch ` +
    `(${plural(setup.microBatchSequences, 'sequence')}), ` +
    `FlashAttention ${setup.flashAttention ? 'on' : 'off'}. ` +
    `That is ${formatWorth(estimate.devicesWorth)} ${estimate.device.shortName}s' worth of memory, at ${format(estimate.device.capacityBytes, 0)} each.`
  );
}

async function start() {
  const controls = {
    model: $('model'),
    slider: $('tokens-slider'),
    tokens: $('tokens'),
    flashAttention: $('flash-attention'),
  };
  const tokensError = $('tokens-error');
  const readout = $('readout');

  let estimator;
  try {
    estimator = await loadEstimator();
  } catch (error) {
    readout.textContent = `The estimator could not load (${error.message}). Reload the page to try again.`;
    return;
  }

  controls.model.replaceChildren(...estimator.presets.map((preset) => new Option(preset.name, preset.id)));
  controls.slider.max = String(MAX_MICRO_BATCH_SEQUENCES);
  fillPlateFigures(estimator);

  const charts = createCharts({
    breakdownCanvas: $('breakdown-chart'),
    activationsCanvas: $('activations-chart'),
    formatBytes: estimator.formatBytes,
    formatCount: estimator.formatCount,
  });

  let state = { ...DEFAULT_STATE };

  function showTokensError(message) {
    tokensError.textContent = message;
    tokensError.hidden = !message;
    controls.tokens.setAttribute('aria-invalid', message ? 'true' : 'false');
  }

  function syncControls(estimate) {
    controls.model.value = state.model;
    controls.slider.value = String(state.microBatchSequences);
    controls.slider.setAttribute(
      'aria-valuetext',
      `${estimator.formatCount(estimate.tokensPerMicroBatch)} tokens`,
    );
    controls.tokens.value = String(estimate.tokensPerMicroBatch);
    controls.flashAttention.checked = state.flashAttention;
  }

  /** Draws `next` if the core accepts it; otherwise keeps the last good view. */
  function render(next) {
    const view = estimator.workshopView(toSetup(next, estimator.defaultSetup), MAX_MICRO_BATCH_SEQUENCES);
    if (!view.ok) {
      showTokensError(view.message);
      return false;
    }
    state = next;
    const { estimate } = view;
    syncControls(estimate);
    readout.textContent = describe(estimator, estimate);
    charts.update(view);
    fillTable($('breakdown-table').tBodies[0], [
      ...TERMS.map((term) => [
        term.label,
        term.perParameterKey ? formatPerParameter(estimate.bytesPerParameter[term.perParameterKey]) : '—',
        estimator.formatBytes(estimate.bytes[term.key]),
      ]),
      [
        'Total',
        String(estimator.bytesPerParameter) + ' + activations',
        estimator.formatBytes(estimate.bytes.totalBytes),
      ],
    ]);
    fillTable(
      $('activations-table').tBodies[0],
      view.activationCurve.map((point) => [
        estimator.formatCount(point.tokens),
        estimator.formatBytes(point.flashAttentionBytes),
        estimator.formatBytes(point.withoutFlashAttentionBytes),
      ]),
    );
    document.body.dataset.ready = 'true';
    return true;
  }

  controls.model.addEventListener('change', () => render({ ...state, model: controls.model.value }));
  controls.flashAttention.addEventListener('change', () =>
    render({ ...state, flashAttention: controls.flashAttention.checked }),
  );
  controls.slider.addEventListener('input', () => {
    showTokensError('');
    render({ ...state, microBatchSequences: Number(controls.slider.value) });
  });
  // The typed value is committed on Enter or when the field loses focus.
  controls.tokens.addEventListener('change', () => {
    const text = controls.tokens.value.trim();
    const parsed = estimator.microBatchFromTokens(
      text === '' ? Number.NaN : Number(text),
      MAX_MICRO_BATCH_SEQUENCES,
    );
    if (!parsed.ok) {
      showTokensError(parsed.message);
      return;
    }
    showTokensError('');
    render({ ...state, microBatchSequences: parsed.microBatchSequences });
  });
  $('controls').addEventListener('submit', (event) => event.preventDefault());

  render(state);
}

start();
