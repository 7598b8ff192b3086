// The workshop's state is the core's TrainingSetup itself, starting from the core's defaults (the
// plate's view). Each control names the setup field it sets; a control's id is also the name the
// core gives that field in its messages (Estimate.invalidField) and the CLI's flag.

/** The plate's slider runs over 1 to 16 sequences. */
export const MAX_MICRO_BATCH_SEQUENCES = 16;

/**
 * The "Go further" controls: element id, the setup path it sets, and how its text is read
 * (`whole` and `decimal` by the core's parsers, `text` as is, `check` as a checkbox).
 */
export const FURTHER_CONTROLS = Object.freeze([
  { id: 'seq-len', path: ['sequenceLength'], read: 'whole' },
  { id: 'dp', path: ['layout', 'dataParallel'], read: 'whole' },
  { id: 'zero', path: ['layout', 'zeroStage'], read: 'whole' },
  { id: 'tp', path: ['layout', 'tensorParallel'], read: 'whole' },
  { id: 'sequence-parallel', path: ['layout', 'sequenceParallel'], read: 'check' },
  { id: 'pp', path: ['layout', 'pipelineParallel'], read: 'whole' },
  { id: 'vpp', path: ['layout', 'virtualPipelineStages'], read: 'whole' },
  { id: 'cp', path: ['layout', 'contextParallel'], read: 'whole' },
  { id: 'recompute', path: ['recompute'], read: 'text' },
  { id: 'activations', path: ['activationModel'], read: 'text' },
  { id: 'optimizer', path: ['optimizer'], read: 'text' },
  { id: 'precision', path: ['precision'], read: 'text' },
  { id: 'logits', path: ['logits'], read: 'check' },
  { id: 'loss', path: ['loss'], read: 'text' },
  { id: 'device', path: ['deviceId'], read: 'text' },
  { id: 'device-gb', path: ['customCapacityGb'], read: 'decimal' },
]);

/** The value at `path` in `setup`. */
export function getIn(setup, path) {
  return path.reduce((value, key) => value[key], setup);
}

/** A copy of `setup` with `value` at `path`; `setup` itself is never changed. */
export function setIn(setup, path, value) {
  const [key, ...rest] = path;
  return { ...setup, [key]: rest.length === 0 ? value : setIn(setup[key], rest, value) };
}
