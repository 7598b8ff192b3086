// Wires the plate: controls -> state (a TrainingSetup) -> one call into the core -> charts,
// readout and tables. Nothing here computes a figure; the core does.
import { createCharts, createTimelineChart, TERMS } from './charts.js';
import { loadEstimator, loadJsonTools } from './estimator.js';
import { formatPerParameter, formatWorth, plural } from './format.js';
import { FURTHER_CONTROLS, getIn, MAX_MICRO_BATCH_SEQUENCES, setIn } from './state.js';
import { fromQuery, isEmbedded, toQuery } from './url.js';

const FIT_LAYOUTS_SHOWN = 8;
const URL_WRITE_DELAY_MS = 200;

const $ = (id) => document.getElementById(id);

/** Builds a table body from rows of cells: text, or a ready-made element (never HTML). */
function fillTable(tbody, rows) {
  tbody.replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement('tr');
      cells.forEach((content, index) => {
        const cell = document.createElement(index === 0 ? 'th' : 'td');
        if (index === 0) cell.scope = 'row';
        if (content instanceof Node) cell.append(content);
        else cell.textContent = content;
        tr.append(cell);
      });
      return tr;
    }),
  );
}

/** Saves `href` (a data: or blob: URL) as `filename`. */
function download(filename, href) {
  const link = document.createElement('a');
  link.href = href;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
}

function downloadText(filename, type, text) {
  const href = URL.createObjectURL(new Blob([text], { type }));
  download(filename, href);
  setTimeout(() => URL.revokeObjectURL(href), 0);
}

function fillSelect(select, choices) {
  select.replaceChildren(...choices.map((choice) => new Option(choice.name, choice.id)));
}

/** The plate's prose quotes fixed configurations; their figures come from the core too. */
function fillPlateFigures(estimator) {
  const plate = (modelId, flashAttention) =>
    estimator.estimate({ ...estimator.defaultSetup, modelId, flashAttention });
  const eightB = plate('llama3-8b', true);
  const eightBNoFlash = plate('llama3-8b', false);
  const fourOFiveB = plate('llama3-405b', true);
  const eightBLlamaBlock = estimator.estimate({ ...estimator.defaultSetup, activationModel: 'llama-block' });
  const figures = {
    'params-8b': estimator.formatParameters(eightB.numParameters),
    'states-8b': estimator.formatBytes(eightB.bytes.modelStatesBytes),
    'activations-8b': estimator.formatBytes(eightB.bytes.activationsBytes),
    'total-8b': estimator.formatBytes(eightB.bytes.totalBytes),
    'worth-8b': formatWorth(eightB.devicesWorth),
    'total-8b-no-flash': estimator.formatBytes(eightBNoFlash.bytes.totalBytes),
    'states-405b': estimator.formatBytes(fourOFiveB.bytes.modelStatesBytes),
    'worth-405b': fourOFiveB.devicesWorth.toFixed(0),
    'llama-block-activations-8b': estimator.formatBytes(eightBLlamaBlock.bytes.activationsBytes),
  };
  for (const element of document.querySelectorAll('[data-figure]')) {
    element.textContent = figures[element.dataset.figure] ?? '—';
  }
}

/** The readout: the same numbers as the charts, in a sentence. */
function describe(estimator, estimate) {
  const { bytes, setup, device } = estimate;
  const format = estimator.formatBytes;
  const activations =
    `${format(bytes.activationsBytes)} of activations` +
    (setup.logits ? ` and ${format(bytes.logitsBytes)} of logits and loss` : '') +
    ` for ${estimator.formatCount(estimate.tokensPerMicroBatch)} tokens per micro-batch ` +
    `(${plural(setup.microBatchSequences, 'sequence')}), FlashAttention ${setup.flashAttention ? 'on' : 'off'}.`;
  const states = `${format(bytes.modelStatesBytes)} of model states`;
  if (estimate.numDevices === 1) {
    return (
      `${estimate.modelName} needs ${format(bytes.totalBytes)} to train on one device: ${states} ` +
      `(${formatPerParameter(estimate.bytesPerParameter.total)} bytes × ` +
      `${estimator.formatParameters(estimate.numParameters)} parameters) and ${activations} ` +
      `That is ${formatWorth(estimate.devicesWorth)} ${device.shortName}s' worth of memory, ` +
      `at ${format(device.capacityBytes, 0)} each.`
    );
  }
  const verdict = estimate.fits
    ? `It fits in one ${device.name}, using ${estimator.formatShare(estimate.devicesWorth)} of its memory.`
    : `It does not fit in one ${device.name}: ${formatWorth(estimate.devicesWorth)} times its memory.`;
  return (
    `Spread over ${estimator.formatLayout(estimate)}, ${estimate.modelName} needs ` +
    `${format(bytes.totalBytes)} on its most loaded device: ${states} and ${activations} ${verdict}`
  );
}

/** Embedded (?embed=1): only the workshop, and its height posted to the parent window. */
function embed() {
  document.documentElement.classList.add('embed');
  const postHeight = () => {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    window.parent.postMessage({ type: 'trainmem:height', height }, '*');
  };
  new ResizeObserver(postHeight).observe(document.documentElement);
}

async function start() {
  if (isEmbedded(location.search)) embed();
  const plateControls = {
    model: $('model'),
    slider: $('tokens-slider'),
    tokens: $('tokens'),
    flashAttention: $('flash-attention'),
  };
  const readout = $('readout');

  // The charts are built while the WebAssembly module compiles; their tick labels ask the core
  // once it is there.
  let estimator = null;
  const charts = createCharts({
    breakdownCanvas: $('breakdown-chart'),
    activationsCanvas: $('activations-chart'),
    formatBytes: (bytes, decimals) => estimator?.formatBytes(bytes, decimals) ?? '',
    formatBytesShort: (bytes) => estimator?.formatBytesShort(bytes) ?? '',
    formatCount: (count) => estimator?.formatCount(count) ?? '',
  });
  try {
    estimator = await loadEstimator();
  } catch (error) {
    readout.textContent = `The estimator could not load (${error.message}). Reload the page to try again.`;
    return;
  }

  for (const id of ['recompute', 'activations', 'optimizer', 'precision', 'loss', 'device']) {
    fillSelect($(id), estimator.choices[id]);
  }
  plateControls.slider.max = String(MAX_MICRO_BATCH_SEQUENCES);
  fillPlateFigures(estimator);

  const embedded = isEmbedded(location.search);
  const fromLink = fromQuery(location.search, estimator, MAX_MICRO_BATCH_SEQUENCES);
  let state = fromLink.state;
  let customConfigText = null; // the config.json text behind a custom model, kept for links
  const notice = $('url-notice');
  notice.textContent = fromLink.notices.join(' ');
  notice.hidden = fromLink.notices.length === 0;

  /** Shows `message` by the control the core named (or clears every message). */
  function showError(field, message) {
    for (const element of document.querySelectorAll('.error')) {
      element.textContent = '';
      element.hidden = true;
    }
    for (const element of document.querySelectorAll('[aria-invalid="true"]')) {
      element.setAttribute('aria-invalid', 'false');
    }
    if (!message) return;
    const id = { 'micro-batch': 'tokens', model: 'tokens', config: 'config' }[field] ?? field;
    const box = $(`${id}-error`) ?? $('tokens-error');
    box.textContent = message;
    box.hidden = false;
    $(id)?.setAttribute('aria-invalid', 'true');
  }

  function syncModelOptions() {
    const options = estimator.presets.map((preset) => new Option(preset.name, preset.id));
    if (state.modelId === estimator.customModelId) {
      options.push(new Option(`${state.customModel.name} (config.json)`, estimator.customModelId));
    }
    plateControls.model.replaceChildren(...options);
  }

  function syncControls(estimate) {
    syncModelOptions();
    plateControls.model.value = state.modelId;
    plateControls.slider.value = String(state.microBatchSequences);
    plateControls.slider.setAttribute(
      'aria-valuetext',
      `${estimator.formatCount(estimate.tokensPerMicroBatch)} tokens`,
    );
    plateControls.tokens.value = String(estimate.tokensPerMicroBatch);
    plateControls.flashAttention.checked = state.flashAttention;
    $('tokens-hint').textContent =
      `Whole sequences of ${estimator.formatCount(state.sequenceLength)} tokens, ` +
      `1 to ${MAX_MICRO_BATCH_SEQUENCES} of them.`;
    for (const control of FURTHER_CONTROLS) {
      const element = $(control.id);
      const value = getIn(state, control.path);
      if (control.read === 'check') element.checked = value;
      else element.value = String(value);
    }
    $('device-gb').disabled = state.deviceId !== 'custom';
    $('loss').disabled = !state.logits; // the loss is counted with the logits
  }

  function fillArithmetic() {
    $('arithmetic-list').replaceChildren(
      ...estimator.explain(state).flatMap((term) => {
        const dt = document.createElement('dt');
        dt.textContent = term.label;
        const dd = document.createElement('dd');
        const formula = document.createElement('code');
        formula.textContent = term.formula;
        const source = document.createElement('span');
        source.className = 'source';
        source.textContent = term.source;
        dd.append(formula, source);
        return [dt, dd];
      }),
    );
    fillSavedTensors();
  }

  /** Under the llama-block model, the tensors behind the activations term, one row each. */
  function fillSavedTensors() {
    const llamaBlock = state.activationModel === 'llama-block';
    $('saved-tensors').hidden = !llamaBlock;
    if (!llamaBlock) return;
    const { tensors, bytesPerToken } = estimator.savedTensors(state);
    const bytes = (value) => `${estimator.formatCount(value)} B`;
    fillTable(
      $('saved-tensors-table').tBodies[0],
      tensors.map((tensor) => {
        // The name, and under it what keeps the tensor: one column that fits a phone.
        const name = document.createElement('span');
        name.textContent = tensor.name;
        const keptFor = document.createElement('span');
        keptFor.className = 'source';
        keptFor.textContent = ` — kept for ${tensor.savedBy}`;
        const cell = document.createDocumentFragment();
        cell.append(name, keptFor);
        return [
          cell,
          tensor.dtypeBytes === 4 ? 'FP32' : 'BF16',
          tensor.split > 1 ? `${tensor.elements} / ${estimator.formatCount(tensor.split)}` : tensor.elements,
          bytes(tensor.bytesPerToken),
        ];
      }),
    );
    $('saved-tensors-total').textContent = bytes(bytesPerToken);
    $('saved-tensors-caption').textContent =
      state.recompute === 'full'
        ? 'The tensors one layer saves while it is rebuilt in the backward pass (full recomputation keeps only its input between passes), per token on one device'
        : 'The tensors one layer saves for its backward pass, per token on one device';
  }

  /** How close is this: the measured cases never change, so the table is filled once. */
  const measuredPanel = $('measured');
  async function fillMeasured() {
    if (measuredPanel.dataset.filled) return;
    measuredPanel.dataset.filled = 'true';
    const body = $('measured-table').tBodies[0];
    let runs;
    try {
      runs = await estimator.measured();
    } catch (error) {
      delete measuredPanel.dataset.filled; // let the next opening try again
      $('measured-status').textContent = `The measured cases could not load (${error.message}).`;
      return;
    }
    $('measured-status').textContent = '';
    const cell = (tag, text) => {
      const element = document.createElement(tag);
      element.textContent = text;
      return element;
    };
    let group = '';
    const rows = [];
    for (const run of runs) {
      // Runs from one source, measured one way, share a heading that says so.
      const what = { activations: 'Activations', logits: 'The loss', total: 'Whole device' }[run.quantity];
      const heading = `${what}: ${run.statistic}.`;
      const details = `Source: ${run.source}. ${run.note}.`;
      if (heading + details !== group) {
        group = heading + details;
        const th = cell('th', heading);
        th.scope = 'colgroup';
        th.colSpan = 4;
        const source = cell('span', details);
        source.className = 'source';
        th.append(source);
        const tr = document.createElement('tr');
        tr.className = 'group';
        tr.append(th);
        rows.push(tr);
      }
      const tr = document.createElement('tr');
      const title = cell('th', run.title);
      title.scope = 'row';
      // The figure, then its error on a line of its own (one line apart when there is room).
      const estimate = (figure, error) => {
        const td = cell('td', run.ok ? figure : run.message);
        if (run.ok) {
          const percent = cell('span', ` (${error})`);
          percent.className = 'error-percent';
          td.append(percent);
        }
        return td;
      };
      tr.append(
        title,
        cell('td', run.measured),
        estimate(run.korthikanti, run.korthikantiError),
        estimate(run.llamaBlock, run.llamaBlockError),
      );
      rows.push(tr);
    }
    body.replaceChildren(...rows);
  }
  measuredPanel.addEventListener('toggle', () => measuredPanel.open && fillMeasured());

  let fitShown = false;
  function clearFit(note) {
    if (!fitShown) return;
    fitShown = false;
    $('fit-table').hidden = true;
    $('fit-summary').textContent = note;
  }

  /**
   * Keeps the URL on the view, without a history entry per change. During a slider drag the
   * write waits for a pause: replaceState costs milliseconds, more than the redraw's budget.
   */
  let urlTimer = 0;
  let deferUrl = false;
  function saveToUrl(estimate) {
    clearTimeout(urlTimer);
    if (deferUrl) {
      urlTimer = setTimeout(() => writeUrl(estimate), URL_WRITE_DELAY_MS);
      return;
    }
    writeUrl(estimate);
  }

  function writeUrl(estimate) {
    try {
      const configText = state.modelId === estimator.customModelId ? customConfigText : null;
      history.replaceState(null, '', toQuery(state, estimate, embedded, configText));
    } catch {
      // Some hosts (a file:// page in some browsers) refuse; the view still works.
    }
  }

  /** The charts' numbers as tables: filled while their panel is open, not on every slider step. */
  const numbers = document.querySelector('.numbers');
  const arithmetic = $('arithmetic');
  let lastView = null;
  function fillNumbers(view) {
    const { estimate } = view;
    const shownTerms = TERMS.filter((term) => term.key !== 'logitsBytes' || state.logits);
    fillTable($('breakdown-table').tBodies[0], [
      ...shownTerms.map((term) => [
        term.label,
        term.perParameterKey ? formatPerParameter(estimate.bytesPerParameter[term.perParameterKey]) : '—',
        estimator.formatBytes(estimate.bytes[term.key]),
      ]),
      [
        'Total',
        `${formatPerParameter(estimate.bytesPerParameter.total)} + activations`,
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
  }
  numbers.addEventListener('toggle', () => numbers.open && lastView && fillNumbers(lastView));

  /** What saves the most: each single change, the bytes it saves and the devices it adds. */
  const savingsPanel = $('savings');
  function fillSavings() {
    const list = estimator.savings(state);
    $('savings-list').replaceChildren(
      ...list.savings.map((saving) => {
        const item = document.createElement('li');
        const added =
          saving.devicesAdded > 0
            ? `, +${estimator.formatCount(saving.devicesAdded)} device${saving.devicesAdded === 1 ? '' : 's'}`
            : '';
        item.textContent =
          `${saving.label}: saves ${estimator.formatBytes(saving.bytesSaved)}, ` +
          `${estimator.formatBytes(saving.estimate.bytes.totalBytes)} on the most loaded device${added}.`;
        const apply = document.createElement('button');
        apply.type = 'button';
        apply.textContent = 'Apply';
        apply.setAttribute('aria-label', `Apply: ${saving.label}`);
        apply.addEventListener('click', () => render(saving.estimate.setup));
        item.append(apply);
        return item;
      }),
    );
  }

  /** Where it fits: a cell per sequence length and micro-batch, the share of one device. */
  const mapPanel = $('where-it-fits');
  function fillFitMap() {
    const map = estimator.fitMap(state);
    const table = $('fit-map');
    const head = document.createElement('tr');
    const corner = document.createElement('th');
    corner.scope = 'col';
    corner.textContent = 'tokens \\ sequences';
    head.append(corner);
    for (const sequences of map.microBatchSequences) {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = String(sequences);
      head.append(th);
    }
    table.tHead.replaceChildren(head);
    const columns = map.microBatchSequences.length;
    fillTable(
      table.tBodies[0],
      map.sequenceLengths.map((sequenceLength, row) => [
        estimator.formatCount(sequenceLength),
        ...map.cells.slice(row * columns, (row + 1) * columns).map((cell) => {
          if (!cell.valid) return '—';
          const button = document.createElement('button');
          button.type = 'button';
          button.className = cell.fits ? 'fits' : 'over';
          const share = estimator.formatShare(cell.devicesWorth);
          button.textContent = cell.fits ? share : `✗ ${share}`;
          // The accessible name starts with the visible text, then says what the cell means.
          button.setAttribute(
            'aria-label',
            `${button.textContent}: ${estimator.formatCount(cell.sequenceLength)} tokens, ` +
              `${plural(cell.microBatchSequences, 'sequence')}, ${estimator.formatBytes(cell.totalBytes)}, ` +
              `${cell.fits ? 'fits' : 'does not fit'}`,
          );
          const current =
            cell.sequenceLength === state.sequenceLength &&
            cell.microBatchSequences === state.microBatchSequences;
          button.setAttribute('aria-current', current ? 'true' : 'false');
          button.addEventListener('click', () =>
            render({
              ...state,
              sequenceLength: cell.sequenceLength,
              microBatchSequences: cell.microBatchSequences,
            }),
          );
          return button;
        }),
      ]),
    );
  }
  /** Memory over one step, drawn on first opening (the first view does not need it). */
  const timelinePanel = $('timeline');
  let timelineChart = null;
  function fillTimeline() {
    timelineChart ??= createTimelineChart($('timeline-chart'), {
      formatBytes: estimator.formatBytes,
      formatBytesShort: estimator.formatBytesShort,
    });
    const { points, peakIndex } = estimator.timeline(state);
    const peak = points[peakIndex];
    const where = peak.layer > 0 ? `${peak.phase}, layer ${peak.layer}` : peak.phase;
    timelineChart.update(points, peakIndex, `Peak ${estimator.formatBytes(peak.bytes)}`);
    $('timeline-summary').textContent =
      `Peak: ${estimator.formatBytes(peak.bytes)} at ${where}, the estimate's total; ` +
      `the model states alone hold ${estimator.formatBytes(points[0].bytes)} throughout.`;
  }
  timelinePanel.addEventListener('toggle', () => timelinePanel.open && fillTimeline());
  savingsPanel.addEventListener('toggle', () => savingsPanel.open && fillSavings());
  mapPanel.addEventListener('toggle', () => mapPanel.open && fillFitMap());

  /** Compare: a pinned estimate stands beside the current one, with the difference in words. */
  let pinned = null;
  function showComparison(estimate) {
    const compare = $('compare');
    compare.hidden = pinned === null;
    $('pin').hidden = pinned !== null;
    $('unpin').hidden = pinned === null;
    compare.textContent = pinned ? estimator.compare(pinned, estimate) : '';
  }
  arithmetic.addEventListener('toggle', () => arithmetic.open && fillArithmetic());

  /** Draws `next` if the core accepts it; otherwise keeps the last good view and says why. */
  function render(next) {
    const view = estimator.workshopView(next, MAX_MICRO_BATCH_SEQUENCES);
    if (!view.ok) {
      showError(view.estimate.invalidField, view.message);
      return false;
    }
    showError('', '');
    state = next;
    const { estimate } = view;
    syncControls(estimate);
    readout.textContent = describe(estimator, estimate);
    $('breakdown-title').textContent =
      estimate.numDevices === 1 ? 'Memory to train on one device' : 'Memory on the most loaded device';
    charts.update(view, pinned);
    lastView = view;
    if (numbers.open) fillNumbers(view);
    if (arithmetic.open) fillArithmetic();
    if (timelinePanel.open) fillTimeline();
    if (savingsPanel.open) fillSavings();
    if (mapPanel.open) fillFitMap();
    showComparison(estimate);
    clearFit('The settings changed: search again for this configuration.');
    saveToUrl(estimate);
    document.body.dataset.ready = 'true';
    return true;
  }

  function findFit() {
    const search = estimator.fewestDevices(state, FIT_LAYOUTS_SHOWN);
    if (!search.ok) {
      showError(search.invalidField, search.message);
      return;
    }
    const table = $('fit-table');
    if (search.layouts.length === 0) {
      $('fit-summary').textContent = search.whyNotFewer;
      table.hidden = true;
      return;
    }
    const first = search.layouts[0];
    $('fit-summary').textContent =
      `${first.modelName} at ${estimator.formatCount(first.tokensPerMicroBatch)} tokens per micro-batch ` +
      `fits on ${estimator.formatCount(search.fewestDevices)} × ${first.device.name} at the fewest. ` +
      search.whyNotFewer;
    fillTable(
      table.tBodies[0],
      search.layouts.map((layout) => {
        const apply = document.createElement('button');
        apply.type = 'button';
        apply.textContent = 'Use';
        apply.setAttribute('aria-label', `Use ${estimator.formatLayout(layout)}`);
        apply.addEventListener('click', () => render(layout.setup));
        return [
          estimator.formatLayout(layout),
          estimator.formatBytes(layout.bytes.totalBytes),
          estimator.formatBytes(layout.bytes.modelStatesBytes),
          estimator.formatBytes(layout.bytes.activationsBytes),
          apply,
        ];
      }),
    );
    table.hidden = false;
    fitShown = true;
  }

  plateControls.model.addEventListener('change', () =>
    render({ ...state, modelId: plateControls.model.value }),
  );
  plateControls.flashAttention.addEventListener('change', () =>
    render({ ...state, flashAttention: plateControls.flashAttention.checked }),
  );
  plateControls.slider.addEventListener('input', () => {
    deferUrl = true;
    render({ ...state, microBatchSequences: Number(plateControls.slider.value) });
    deferUrl = false;
  });
  // The end of a drag (or a key press) writes the URL at once.
  plateControls.slider.addEventListener('change', () => {
    clearTimeout(urlTimer);
    if (lastView) writeUrl(lastView.estimate);
  });
  // Typed values are committed on Enter or when the field loses focus.
  plateControls.tokens.addEventListener('change', () => {
    const tokens = estimator.parseDecimal(plateControls.tokens.value.trim());
    const parsed = estimator.microBatchFromTokens(tokens, state.sequenceLength, MAX_MICRO_BATCH_SEQUENCES);
    if (!parsed.ok) {
      showError('tokens', parsed.message);
      return;
    }
    render({ ...state, microBatchSequences: parsed.microBatchSequences });
  });
  for (const control of FURTHER_CONTROLS) {
    const element = $(control.id);
    element.addEventListener('change', () => {
      const text = control.read === 'check' ? '' : element.value.trim();
      const value = {
        check: () => element.checked,
        whole: () => estimator.parseWholeNumber(text),
        decimal: () => estimator.parseDecimal(text),
        text: () => text,
      }[control.read]();
      render(setIn(state, control.path, value));
    });
  }
  $('reset-further').addEventListener('click', () =>
    render({
      ...estimator.defaultSetup,
      modelId: state.modelId,
      customModel: state.customModel,
      microBatchSequences: state.microBatchSequences,
      flashAttention: state.flashAttention,
    }),
  );
  $('find-fit').addEventListener('click', findFit);
  $('pin').addEventListener('click', () => {
    pinned = lastView.estimate;
    render(state);
  });
  $('unpin').addEventListener('click', () => {
    pinned = null;
    render(state);
  });
  const fileStem = () => `trainmem-${state.modelId}-${state.microBatchSequences}x${state.sequenceLength}`;
  $('export-breakdown-png').addEventListener('click', () =>
    download(`${fileStem()}-memory.png`, charts.toPng('breakdown')),
  );
  $('export-activations-png').addEventListener('click', () =>
    download(`${fileStem()}-activations.png`, charts.toPng('activations')),
  );
  const exportText = (extension, type, write) =>
    loadJsonTools()
      .then((tools) => downloadText(`${fileStem()}.${extension}`, type, write(tools)))
      .catch((error) => showError('config', `The download could not be made (${error.message}).`));
  $('export-csv').addEventListener('click', () =>
    exportText('csv', 'text/csv', (tools) => tools.toCsv(state)),
  );
  $('export-json').addEventListener('click', () =>
    exportText('json', 'application/json', (tools) => tools.toJson(state)),
  );

  // Any model: a config.json pasted, dropped or chosen, read by the core.
  const configText = $('config');
  async function useConfig(text) {
    try {
      const tools = await loadJsonTools();
      const parsed = tools.parseConfig(text);
      if (!parsed.ok) {
        showError('config', parsed.message);
        return;
      }
      if (render({ ...state, modelId: estimator.customModelId, customModel: parsed.shape })) {
        customConfigText = JSON.stringify(JSON.parse(text));
        saveToUrl(lastView.estimate);
      }
    } catch (error) {
      showError('config', `The config reader could not load (${error.message}).`);
    }
  }
  async function useConfigFile(file) {
    if (!file) return;
    let tools;
    try {
      tools = await loadJsonTools();
    } catch (error) {
      showError('config', `The config reader could not load (${error.message}).`);
      return;
    }
    if (file.size > tools.maxConfigBytes) {
      showError(
        'config',
        `config.json: the file is ${estimator.formatCount(file.size)} bytes; at most ${estimator.formatCount(tools.maxConfigBytes)} are read.`,
      );
      return;
    }
    const text = await file.text();
    configText.value = text;
    useConfig(text);
  }
  $('use-config').addEventListener('click', () => useConfig(configText.value));
  $('config-file').addEventListener('change', (event) => useConfigFile(event.target.files[0]));
  configText.addEventListener('dragover', (event) => {
    event.preventDefault();
    configText.classList.add('dragging');
  });
  configText.addEventListener('dragleave', () => configText.classList.remove('dragging'));
  configText.addEventListener('drop', (event) => {
    event.preventDefault();
    configText.classList.remove('dragging');
    useConfigFile(event.dataTransfer.files[0]);
  });
  for (const form of document.querySelectorAll('form')) {
    form.addEventListener('submit', (event) => event.preventDefault());
  }

  render(state);
  if (fromLink.configText !== null) {
    configText.value = fromLink.configText;
    useConfig(fromLink.configText);
  }
}

start();
