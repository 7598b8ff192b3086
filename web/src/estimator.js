// The one door to the C++ core. The module loads once (a memoised promise); every figure the
// page shows comes through here, and nothing here does arithmetic of its own.

let modulePromise = null;

/** Loads the WebAssembly estimator once; later calls share the same promise. */
export function loadEstimator() {
  if (!modulePromise) {
    const factory = globalThis.createTrainmemModule;
    if (typeof factory !== 'function') {
      return Promise.reject(new Error('trainmem.js did not load'));
    }
    modulePromise = factory().then((core) => makeEstimator(core));
  }
  return modulePromise;
}

function makeEstimator(core) {
  const isOk = (result) => result.status === core.Status.OK;
  return {
    sequenceLength: core.plateSequenceLength,
    bytesPerParameter: core.modelStateBytesPerParameter,
    /** Bytes per parameter of each model-state term, keyed as in the core's MemoryBreakdown. */
    termBytesPerParameter: {
      weightsBytes: core.weightBytesPerParameter,
      gradientsBytes: core.gradientBytesPerParameter,
      masterWeightsBytes: core.masterWeightBytesPerParameter,
      optimizerStatesBytes: core.optimizerStateBytesPerParameter,
    },
    presets: core.presetModels(),

    /** Everything the workshop draws, from one call: {ok, message, estimate, activationCurve}. */
    workshopView(setup, maxMicroBatchSequences) {
      const view = core.workshopView(setup, maxMicroBatchSequences);
      return { ok: isOk(view.estimate), message: view.estimate.message, ...view };
    },

    /** One estimate: {ok, message, ...Estimate}. */
    estimate(setup) {
      const estimate = core.estimateMemory(setup);
      return { ok: isOk(estimate), ...estimate };
    },

    /** Tokens typed by a reader, checked by the core: {ok, message, microBatchSequences}. */
    microBatchFromTokens(tokens, maxMicroBatchSequences) {
      const result = core.microBatchFromTokens(tokens, core.plateSequenceLength, maxMicroBatchSequences);
      return { ok: isOk(result), message: result.message, microBatchSequences: result.microBatchSequences };
    },

    formatBytes: (bytes, decimals = 1) => core.formatBytes(bytes, decimals),
    formatParameters: (count) => core.formatParameters(count),
    formatCount: (count) => core.formatCount(count),
  };
}
