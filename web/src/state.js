// The workshop's state: one schema, its defaults (the plate's view), and its mapping onto the
// core's TrainingSetup. Each key is also the id of the control that sets it.

/** The plate's slider runs over 1 to 16 sequences of 8,192 tokens. */
export const MAX_MICRO_BATCH_SEQUENCES = 16;

export const DEFAULT_STATE = Object.freeze({
  model: 'llama3-8b',
  microBatchSequences: 1,
  flashAttention: true,
});

/** The core's TrainingSetup for a state, on the core's own defaults for every other field. */
export function toSetup(state, defaultSetup) {
  return {
    ...defaultSetup,
    modelId: state.model,
    microBatchSequences: state.microBatchSequences,
    flashAttention: state.flashAttention,
  };
}
