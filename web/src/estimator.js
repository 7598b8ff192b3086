// The one door to the C++ core. The module loads once (a memoised promise); every figure the
// page shows comes through here, and nothing here does arithmetic of its own.

let modulePromise = null;

/** Adds a classic script once; resolves when it has run. */
function addScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`${src} did not load`));
    document.head.append(script);
  });
}

/**
 * The module's options: over http(s) it fetches trainmem.wasm itself and compiles it as it
 * streams; from file://, where a page cannot fetch its own files, the bytes come from
 * trainmem-wasm.js instead.
 */
async function moduleOptions() {
  if (globalThis.location?.protocol !== 'file:') return {};
  if (typeof globalThis.trainmemWasmBase64 !== 'string') await addScript('trainmem-wasm.js');
  const text = atob(globalThis.trainmemWasmBase64);
  const wasmBinary = new Uint8Array(text.length);
  for (let index = 0; index < text.length; index += 1) wasmBinary[index] = text.charCodeAt(index);
  return { wasmBinary };
}

/** Loads the WebAssembly estimator once; later calls share the same promise. */
export function loadEstimator() {
  if (!modulePromise) {
    const factory = globalThis.createTrainmemModule;
    if (typeof factory !== 'function') {
      return Promise.reject(new Error('trainmem.js did not load'));
    }
    modulePromise = moduleOptions()
      .then((options) => factory(options))
      .then((core) => makeEstimator(core));
  }
  return modulePromise;
}

let jsonPromise = null;

/**
 * The second module, loaded only when a reader asks for it: config.json in, JSON and CSV out,
 * and the measured cases. Resolves to {parseConfig(text), toJson(setup), toCsv(setup), measured(),
 * maxConfigBytes}.
 */
export function loadJsonTools() {
  if (!jsonPromise) {
    const ready =
      typeof globalThis.createTrainmemJsonModule === 'function'
        ? Promise.resolve()
        : addScript('trainmem-json.js');
    jsonPromise = ready
      .then(() => globalThis.createTrainmemJsonModule())
      .then((json) => ({
        maxConfigBytes: json.maxConfigBytes,
        /** {ok, message, shape} for a config.json's text. */
        parseConfig(text) {
          const parsed = json.parseHfConfig(text);
          return { ok: parsed.status === json.Status.OK, message: parsed.message, shape: parsed.shape };
        },
        toJson: (setup) => json.setupToJson(setup),
        toCsv: (setup) => json.setupToCsv(setup),
        measured: () => json.compareMeasured(),
      }));
    jsonPromise.catch(() => {
      jsonPromise = null; // let a later click try again
    });
  }
  return jsonPromise;
}

/** The TrainingSetup fields the core reads as C++ ints, by path. */
const WHOLE_FIELDS = [
  ['sequenceLength'],
  ['microBatchSequences'],
  ['layout', 'dataParallel'],
  ['layout', 'zeroStage'],
  ['layout', 'tensorParallel'],
  ['layout', 'pipelineParallel'],
  ['layout', 'virtualPipelineStages'],
  ['layout', 'contextParallel'],
];
const INT_LIMIT = 2 ** 31;

/**
 * Embind would quietly truncate 8192.7 to 8192, wrap 2^32 + 2 to 2, and throw on a missing
 * field: for callers of the JavaScript API, such a setup is refused here instead, like any other.
 */
function setupProblem(setup) {
  for (const path of WHOLE_FIELDS) {
    const value = path.reduce((object, key) => object?.[key], setup);
    if (!Number.isInteger(value) || Math.abs(value) >= INT_LIMIT) {
      return `${path.join('.')} must be a whole number; it is ${String(value).slice(0, 40)}.`;
    }
  }
  return null;
}

/**
 * Fields added to TrainingSetup after the API was first published, with the value that keeps an
 * older caller's estimate what it was: a setup written without them gets them here.
 */
const LATER_FIELDS = Object.freeze({ activationModel: 'korthikanti', loss: 'vocab-parallel' });

function withLaterFields(setup) {
  if (typeof setup !== 'object' || setup === null) return setup;
  const missing = Object.keys(LATER_FIELDS).filter((key) => setup[key] === undefined);
  if (missing.length === 0) return setup;
  return { ...setup, ...Object.fromEntries(missing.map((key) => [key, LATER_FIELDS[key]])) };
}

function makeEstimator(core) {
  const isOk = (result) => result.status === core.Status.OK;
  /** Calls the core, or answers {ok: false, message} for a setup it cannot be given. */
  /** Calls the core, or answers `empty` for a setup it cannot be given. */
  const orEmpty = (setup, empty, call) => (setupProblem(setup) ? empty : call(withLaterFields(setup)));
  const guarded = (given, call) => {
    const problem = setupProblem(given);
    if (problem) return { ok: false, message: problem, invalidField: 'setup' };
    try {
      return call(withLaterFields(given));
    } catch (error) {
      return { ok: false, message: `The setup is incomplete: ${error.message}`, invalidField: 'setup' };
    }
  };
  return {
    presets: core.presetModels(),
    customModelId: core.customModelId,
    /** The core's TrainingSetup defaults: the plate's view, every field present. */
    defaultSetup: core.defaultSetup(),
    choices: {
      device: core.deviceChoices(),
      precision: core.precisionChoices(),
      optimizer: core.optimizerChoices(),
      recompute: core.recomputeChoices(),
      activations: core.activationModelChoices(),
      loss: core.lossChoices(),
    },

    /** Everything the workshop draws, from one call: {ok, message, estimate, activationCurve}. */
    workshopView(setup, maxMicroBatchSequences) {
      return guarded(setup, (setup) => {
        const view = core.workshopView(setup, maxMicroBatchSequences);
        return { ok: isOk(view.estimate), message: view.estimate.message, ...view };
      });
    },

    /** One estimate: {ok, message, ...Estimate}. */
    estimate(setup) {
      return guarded(setup, (setup) => {
        const estimate = core.estimateMemory(setup);
        return { ok: isOk(estimate), ...estimate };
      });
    },

    /** Tokens typed by a reader, checked by the core: {ok, message, microBatchSequences}. */
    microBatchFromTokens(tokens, sequenceLength, maxMicroBatchSequences) {
      const result = core.microBatchFromTokens(tokens, sequenceLength, maxMicroBatchSequences);
      return { ok: isOk(result), message: result.message, microBatchSequences: result.microBatchSequences };
    },

    /** Each term's formula with this setup's numbers, and its source. */
    explain: (setup) => orEmpty(setup, [], core.explainEstimate),

    /**
     * The llama-block model's tensors for one layer of `setup`, per token on one device, and
     * their sum: {tensors: [{id, name, savedBy, elements, elementsPerToken, dtypeBytes, split,
     * bytesPerToken}], bytesPerToken}.
     */
    savedTensors: (setup) => orEmpty(setup, { tensors: [], bytesPerToken: 0 }, core.savedTensors),

    /**
     * How close is this: a promise of every measured case against the estimate of its settings
     * under both activation models, its figures in words: [{id, title, source, statistic,
     * quantity, measured, korthikanti, llamaBlock, korthikantiError, llamaBlockError, note, ...}].
     * The cases come with the on-demand module (trainmem-json.js).
     */
    measured: () => loadJsonTools().then((tools) => tools.measured()),

    /** The fewest devices that fit, their layouts, and why fewer cannot. */
    fewestDevices(setup, maxLayouts) {
      return guarded(setup, (setup) => {
        const search = core.findFewestDevices(setup, maxLayouts);
        return { ok: isOk(search), ...search };
      });
    },

    /** Single changes ranked by the bytes each saves: {ok, baseline, savings: [...]}. */
    savings(setup) {
      return guarded(setup, (setup) => {
        const list = core.rankSavings(setup);
        return { ok: isOk(list), ...list };
      });
    },

    /** The share of the device over sequence length × micro-batch: {ok, sequenceLengths, ...}. */
    fitMap(setup) {
      return guarded(setup, (setup) => {
        const map = core.fitMap(setup);
        return { ok: isOk(map), ...map };
      });
    },

    /** Memory over one step: {points: [{phase, layer, bytes}], peakIndex}; the peak is the total. */
    timeline: (setup) => orEmpty(setup, { points: [], peakIndex: 0 }, core.memoryTimeline),

    /** The current estimate against a pinned one, in words. */
    compare: (pinned, current) => core.compareEstimates(pinned, current),

    formatBytes: (bytes, decimals = 1) => core.formatBytes(bytes, decimals),
    formatBytesShort: (bytes) => core.formatBytesShort(bytes),
    formatParameters: (count) => core.formatParameters(count),
    formatCount: (count) => core.formatCount(count),
    formatLayout: (estimate) => core.formatLayout(estimate),
    formatShare: (fraction) => core.formatShare(fraction),
    /** Typed text read as the CLI reads it: a whole number (else -1) or a decimal (else NaN). */
    parseWholeNumber: (text) => core.parseWholeNumber(text),
    parseDecimal: (text) => core.parseDecimal(text),
  };
}
