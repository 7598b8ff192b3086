// The one door to the C++ core. The page starts with the first view's module (trainmem.js: the
// plate's view alone) and goes on with the full one (trainmem-full.js: every setting, stack, reader
// and view) once a reader asks for more; each loads once (a memoised promise). Every figure the
// page shows comes through here, and nothing here does arithmetic of its own.

import { addScript } from './dom.js';

let modulePromise = null;

/**
 * A module's options: over http(s) its glue fetches its .wasm (trainmem.wasm, trainmem-full.wasm)
 * from beside itself and compiles it as it streams. A page with an opaque origin cannot fetch its
 * own files: opened from file://, or framed in a sandbox without allow-same-origin (a fetch there
 * is a cross-origin request that the server would have to allow). There the bytes come from a
 * classic script instead (trainmem-wasm.js, trainmem-full-wasm.js), which sets `global`.
 */
async function moduleOptions(script, global) {
  const opaque = globalThis.location?.protocol === 'file:' || globalThis.origin === 'null';
  if (!opaque) return {};
  if (typeof globalThis[global] !== 'string') await addScript(script);
  const text = atob(globalThis[global]);
  const wasmBinary = new Uint8Array(text.length);
  for (let index = 0; index < text.length; index += 1) wasmBinary[index] = text.charCodeAt(index);
  return { wasmBinary };
}

/** Loads the first view's estimator (the plate's view alone) once; later calls share it. */
export function loadEstimator() {
  if (!modulePromise) {
    const factory = globalThis.createTrainmemModule;
    if (typeof factory !== 'function') {
      return Promise.reject(new Error('trainmem.js did not load'));
    }
    modulePromise = moduleOptions('trainmem-wasm.js', 'trainmemWasmBase64')
      .then((options) => factory(options))
      .then((core) => makeEstimator(core));
  }
  return modulePromise;
}

let fullPromise = null;

/**
 * The full module, loaded when a reader goes further (a setting beyond the plate's view, a
 * config.json, a launch config, a download, an exploration view) and once only: a promise of
 * {parseConfig(text), textTowerConfig(text), readLaunch(text, setup, worldSize), verdict(setup),
 * toJson(setup), toCsv(setup), maxConfigBytes, module}, `module` the whole core (an estimator's
 * core as well: makeEstimator(module)).
 */
export function loadFullTools() {
  if (!fullPromise) {
    const ready =
      typeof globalThis.createTrainmemFullModule === 'function'
        ? Promise.resolve()
        : addScript('trainmem-full.js');
    fullPromise = ready
      .then(() => moduleOptions('trainmem-full-wasm.js', 'trainmemFullWasmBase64'))
      .then((options) => globalThis.createTrainmemFullModule(options))
      .then((json) => ({
        maxConfigBytes: json.maxConfigBytes,
        /** {ok, message, shape} for a config.json's text. */
        parseConfig(text) {
          const parsed = json.parseHfConfig(text, false);
          return {
            ok: parsed.answer.status === json.Status.OK,
            message: parsed.answer.message,
            shape: parsed.shape,
          };
        },
        /** A multimodal config's text tower as a config.json of its own (or the refusal). */
        textTowerConfig(text) {
          const tower = json.textTowerConfig(text);
          return {
            ok: tower.answer.status === json.Status.OK,
            message: tower.answer.message,
            text: tower.text,
          };
        },
        /**
         * A launch config read over `setup`: {ok, message, setup, kind, read, notUnderstood, notes,
         * leaves}. `worldSize` is torchrun's, where the file leaves it out (0: not given); `leaves`
         * are the ids of the settings the file does not say (a DeepSpeed config's model), which
         * stay the reader's. `yamlToJson` reads YAML (loadYamlTools's); without it YAML is
         * refused.
         */
        readLaunch(text, setup, worldSize, yamlToJson = null) {
          const read = json.readLaunchConfig(text, setup, worldSize, yamlToJson);
          return {
            ok: read.answer.status === json.Status.OK,
            message: read.answer.message,
            setup: read.setup,
            kind: read.kind,
            read: read.read,
            notUnderstood: read.notUnderstood,
            notes: read.notes,
            leaves: read.leaves,
          };
        },
        /**
         * The verdict on `setup`: {ok, message, verdict, reason, fromBand, band: [{title, error}]};
         * withheld (uncertain, saying why) while `notUnderstood`, a launch config's keys, is not empty.
         */
        verdict(setup, notUnderstood = []) {
          const verdict = json.launchVerdict(setup, false, notUnderstood);
          return {
            ok: verdict.answer.status === json.Status.OK,
            message: verdict.answer.message,
            verdict: verdict.verdict,
            reason: verdict.reason,
            fromBand: verdict.fromBand,
            band: verdict.band,
          };
        },
        toJson: (setup) => json.setupToJson(setup),
        toCsv: (setup) => json.setupToCsv(setup),
        module: json,
      }));
    fullPromise.catch(() => {
      fullPromise = null; // let a later click try again
    });
  }
  return fullPromise;
}

/**
 * The page's `estimator` goes on over the full module, in place, so that everything that holds it
 * asks the full core from then on; a promise of the same estimator. The setups it made before
 * (the first view's, which name the plate's settings alone) convert through `fullSetup`.
 */
export function upgradeEstimator(estimator) {
  return loadFullTools().then(({ module }) => {
    if (estimator.full) return estimator;
    Object.assign(estimator, makeEstimator(module, loadFullTools));
    return estimator;
  });
}

/** The estimator over the full module, for other pages (trainmem-api.js). */
export function loadFullEstimator() {
  return loadFullTools().then(({ module }) => makeEstimator(module, loadFullTools));
}

let yamlPromise = null;

/**
 * The YAML parser for launch configs (yaml.js, the npm package yaml), loaded once: resolves to
 * its toJson(text), which gives {json, problem}.
 */
export function loadYamlTools() {
  if (!yamlPromise) {
    yamlPromise = (globalThis.trainmemYaml ? Promise.resolve() : addScript('yaml.js')).then(
      () => globalThis.trainmemYaml.toJson,
    );
    yamlPromise.catch(() => {
      yamlPromise = null;
    });
  }
  return yamlPromise;
}

const INT_LIMIT = 2 ** 31;

/**
 * Embind would quietly truncate 8192.7 to 8192, wrap 2^32 + 2 to 2, throw on a missing field and
 * keep the old value for an unknown choice: for callers of the JavaScript API, such a setup is
 * refused here instead, like any other. Which fields are whole numbers and which are choices comes
 * from the core's table of settings, each at its `apiKey`; a choice is checked by the core.
 */
function setupProblem(core, settings, setup) {
  for (const setting of settings) {
    if (!setting.apiKey) continue;
    const value = setting.apiKey.split('.').reduce((object, key) => object?.[key], setup);
    if (setting.kind === core.SettingKind.WHOLE) {
      if (!Number.isInteger(value) || Math.abs(value) >= INT_LIMIT) {
        return {
          message: `${setting.apiKey} must be a whole number; it is ${String(value).slice(0, 40)}.`,
          setting: 'setup',
        };
      }
    } else if (
      setting.kind === core.SettingKind.CHOICE &&
      typeof value === 'string' &&
      !setting.choices.some((choice) => choice.id === value)
    ) {
      // Not one of the table's choices: the core says whether a setup may hold it (the custom
      // model) and, if not, why.
      const answer = core.checkChoice(setting.id, value);
      if (answer.status !== core.Status.OK) return answer;
    }
  }
  return null;
}

/**
 * Fields added to TrainingSetup after the API was first published (the table's defaultedInApi:
 * activationModel, loss, headroomPercent, and in the layout expertParallel and the uneven stages'
 * layers) get the core's default when a setup lacks them, which keeps an older caller's estimate
 * what it was. An apiKey names its place, one object deep: "layout.expertParallel".
 */
function withLaterFields(core, settings, setup) {
  if (typeof setup !== 'object' || setup === null) return setup;
  const at = (path) => path.split('.').reduce((object, key) => object?.[key], setup);
  const missing = settings.filter((setting) => setting.defaultedInApi && at(setting.apiKey) === undefined);
  if (missing.length === 0) return setup;
  const value = (setting) =>
    setting.kind === core.SettingKind.CHOICE ? setting.defaultText : Number(setting.defaultText);
  const filled = { ...setup };
  for (const setting of missing) {
    const [outer, inner] = setting.apiKey.split('.');
    if (inner === undefined) {
      filled[outer] = value(setting);
    } else if (typeof filled[outer] === 'object' && filled[outer] !== null) {
      filled[outer] = { ...filled[outer], [inner]: value(setting) };
    }
  }
  return filled;
}

/**
 * `value` with every Status of the on-demand module (`theirs`) replaced by the estimator's own
 * (`ours`), so that an answer's `status` compares equal to the same Status whichever module gave it.
 */
function withOurStatus(value, theirs, ours) {
  if (value instanceof theirs) return ours.values[value.value];
  if (Array.isArray(value)) return value.map((item) => withOurStatus(item, theirs, ours));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, withOurStatus(item, theirs, ours)]),
  );
}

/**
 * The page's and the API's estimator over trainmem.js's `core`. The exploration views live in the
 * on-demand module, which `loadLater` loads once (loadFullTools; the Node tests pass the module
 * they loaded): those members answer with promises.
 */
export function makeEstimator(core, loadLater = loadFullTools) {
  const settings = core.settings();
  const terms = core.terms();
  /**
   * The core's answer to a result, in the API's words: {ok, status, message, invalidField} and the
   * result's fields (the core's own `answer` stays only on the estimates nested in them).
   */
  const answered = ({ answer, ...fields }) => ({
    ok: answer.status === core.Status.OK,
    status: answer.status,
    message: answer.message,
    invalidField: answer.setting,
    ...fields,
  });
  const refused = (problem) => ({
    ok: false,
    status: core.Status.INVALID_INPUT,
    message: problem.message,
    invalidField: problem.setting,
  });
  /** Calls the core with a setup it can be given, or answers `empty`. */
  const orEmpty = (given, empty, call) => {
    const setup = withLaterFields(core, settings, given);
    return setupProblem(core, settings, setup) ? empty : call(setup);
  };
  const guarded = (given, call) => {
    const setup = withLaterFields(core, settings, given);
    const problem = setupProblem(core, settings, setup);
    if (problem) return refused(problem);
    try {
      return answered(call(setup));
    } catch (error) {
      return refused({ message: `The setup is incomplete: ${error.message}`, setting: 'setup' });
    }
  };
  /**
   * orEmpty and guarded, in the on-demand module once it has loaded: a promise of the answer (its
   * Status made ours), which rejects only when the module cannot load.
   */
  const inModule = (call) => (setup) =>
    loadLater().then(({ module }) => withOurStatus(call(module, setup), module.Status, core.Status));
  const orEmptyLater = (given, empty, call) => orEmpty(given, Promise.resolve(empty), inModule(call));
  const guardedLater = (given, call) => {
    const setup = withLaterFields(core, settings, given);
    const problem = setupProblem(core, settings, setup);
    if (problem) return Promise.resolve(refused(problem));
    return loadLater().then(({ module }) =>
      guarded(setup, (setup) => withOurStatus(call(module, setup), module.Status, core.Status)),
    );
  };
  return {
    /** Whether this estimator answers every setup (the full module), or the plate's view alone. */
    full: typeof core.explainEstimate === 'function',
    presets: core.presetModels(),
    customModelId: core.customModelId,
    /** The id of the setting that names the model (a custom model comes with a config.json). */
    modelSettingId: core.modelSettingId,
    /** The name of the config.json input: its URL key, and the field its refusals name. */
    configInputId: core.configInputId,
    /** The fewest-devices ranking's stated assumptions (fit.hpp). */
    devicesPerNode: core.devicesPerNode,
    minTokensPerContextShard: core.minTokensPerContextShard,
    /** The core's TrainingSetup defaults: the plate's view, every field present. */
    defaultSetup: core.defaultSetup(),
    /**
     * The core's table of settings: {id, name, kind, min, max, choices, allowed, defaultText, help,
     * apiKey, requiresSetting, requiresValue, requiresAlso, requiresReason, excludes, keeps, inUrl,
     * chosenByFit, defaultedInApi}, each id the page control's id and the URL key. `kind` is one of
     * `settingKinds`.
     */
    settings,
    settingKinds: core.SettingKind,
    /**
     * The core's table of memory terms, in order: {id, apiKey, label, phrase, part, onDevice,
     * onHost, listedWhenHeld, countedBy}; an estimate's `bytes` and `host` hold each at its apiKey.
     */
    terms,
    /** The allowed ids of each choice setting, by setting id: {device: [{id, name, source}], …}. */
    choices: Object.fromEntries(
      settings
        .filter((setting) => setting.kind === core.SettingKind.CHOICE)
        .map((setting) => [setting.id, setting.choices]),
    ),

    /**
     * `setup` with setting `id` read from `text` as the CLI reads its flag ("8", "on",
     * "selective"); tokens are read over `maxMicroBatchSequences`: {ok, message, invalidField,
     * setup}, the setup unchanged when refused.
     */
    changeSetting(setup, id, text, maxMicroBatchSequences) {
      return guarded(setup, (setup) => core.changeSetting(setup, id, text, maxMicroBatchSequences));
    },

    /** Setting `id`'s value in `setup`, as text that changeSetting reads back. */
    settingText: (setup, id) => orEmpty(setup, '', (setup) => core.settingText(setup, id)),

    /**
     * Everything the workshop draws, from one call: {ok, message, estimate, activationCurve,
     * settingTexts, logitsLeftOut, microBatchStep}, `settingTexts` holding every setting's text by
     * its id, `logitsLeftOut` {bytes, loss} what counting the logits as a run does would add (0 when
     * counted), and `microBatchStep` the sequences a micro-batch moves by (DPO's pairs: 2).
     */
    workshopView(setup, maxMicroBatchSequences) {
      return guarded(setup, (setup) => {
        const view = core.workshopView(setup, maxMicroBatchSequences);
        return { answer: view.estimate.answer, ...view };
      });
    },

    /**
     * `setup` with the output layer's logits and loss counted as a run computes them: the stack's
     * own loss, else an unfused cross-entropy over FP32-upcast logits (Hugging Face's).
     */
    withLogitsAsRun: (setup) => orEmpty(setup, setup, core.withLogitsAsRun),

    /**
     * What the setup's stack brings where the reader has not chosen (`chosen`, setting ids): its
     * loss and its precision where the setup's are not what it runs, and a rollout trainer's own:
     * {setup, brought: [{settingId, text, by}]}, `by` who brought it ("The torchtune stack",
     * "verl (1dda039b)"). The plate's view has no stack to choose: nothing there.
     */
    bringStackDefaults: (setup, chosen) =>
      typeof core.bringStackDefaults === 'function'
        ? orEmpty(setup, { setup, brought: [] }, (setup) => core.bringStackDefaults(setup, chosen))
        : { setup, brought: [] },

    /** One estimate: {ok, message, ...Estimate}. */
    estimate: (setup) => guarded(setup, core.estimateMemory),

    /** Tokens typed by a reader, checked by the core: {ok, message, microBatchSequences}. */
    microBatchFromTokens: (tokens, sequenceLength, maxMicroBatchSequences) =>
      answered(core.microBatchFromTokens(tokens, sequenceLength, maxMicroBatchSequences)),

    /** A promise of each term's formula with this setup's numbers, and its source. */
    explain: (setup) => orEmptyLater(setup, [], (module, setup) => module.explainEstimate(setup)),

    /**
     * A promise of the llama-block model's tensors for one layer of `setup`, per token on one
     * device, and their sum: {inUse, caption, tensors: [{id, name, savedBy, elements,
     * elementsPerToken, dtypeBytes, split, bytesPerToken}], bytesPerToken}; `inUse` when the setup
     * counts its activations this way.
     */
    savedTensors: (setup) =>
      orEmptyLater(setup, { inUse: false, caption: '', tensors: [], bytesPerToken: 0 }, (module, setup) =>
        module.savedTensors(setup),
      ),

    /**
     * How close is this: a promise of every measured case against the estimate of its settings
     * under both activation models, its figures in words: [{id, title, source, statistic,
     * quantity, measured, korthikanti, llamaBlock, korthikantiError, llamaBlockError, their
     * percentages korthikantiErrorPercent and llamaBlockErrorPercent, another tool's estimate
     * published with the run (otherEstimateName, otherEstimate, otherEstimateError; "" where
     * there is none), note, ok, message}].
     * The cases come with the on-demand module (trainmem-full.js).
     */
    measured: () => loadLater().then(({ module }) => module.compareMeasured()),

    /**
     * A promise of where trainmem stands against another tool's estimates of the same measured
     * runs (SimuMax's, of its Megatron-LM runs): one sentence for each tool and quantity.
     */
    measuredStanding: () => loadLater().then(({ module }) => module.measuredStanding()),

    /** A promise of the fewest devices that fit, their layouts, and why fewer cannot. */
    fewestDevices: (setup, maxLayouts) =>
      guardedLater(setup, (module, setup) => module.findFewestDevices(setup, maxLayouts)),

    /** A promise of single changes ranked by the bytes each saves: {ok, baseline, savings: [...]}. */
    savings: (setup) => guardedLater(setup, (module, setup) => module.rankSavings(setup)),

    /** A promise of the device's share over sequence length × micro-batch: {ok, sequenceLengths, ...}. */
    fitMap: (setup) => guardedLater(setup, (module, setup) => module.fitMap(setup)),

    /**
     * A promise of memory over one step: {points: [{phase, layer, bytes, reservedBytes, held}],
     * peakIndex}; the peak is the estimate's total under the ideal stack, and its allocated peak
     * under a training stack (the total is then what the allocator has reserved by the step's end).
     */
    timeline: (setup) =>
      orEmptyLater(setup, { points: [], peakIndex: 0 }, (module, setup) => module.memoryTimeline(setup)),

    /** The current estimate against a pinned one, in words. */
    compare: (pinned, current) => core.compareEstimates(pinned, current),

    formatBytes: (bytes, decimals = 1) => core.formatBytes(bytes, decimals),
    formatBytesShort: (bytes) => core.formatBytesShort(bytes),
    /** How `to` bytes stand against `from`: "11.5 GB more", "112.4 GB less" or "the same". */
    formatChange: (from, to) => core.formatChange(from, to),
    formatParameters: (count) => core.formatParameters(count),
    formatCount: (count) => core.formatCount(count),
    formatLayout: (estimate) => core.formatLayout(estimate),
    formatShare: (fraction) => core.formatShare(fraction),
    /** "2.1" devices' worth; near one device "1.03" or "0.97", the side of one it is on. */
    formatWorth: (devicesWorth) => core.formatWorth(devicesWorth),
    formatPercent: (percent) => core.formatPercent(percent),
    /** Typed text read as the CLI reads it: a whole number (else -1) or a decimal (else NaN). */
    parseWholeNumber: (text) => core.parseWholeNumber(text),
    parseDecimal: (text) => core.parseDecimal(text),
  };
}
