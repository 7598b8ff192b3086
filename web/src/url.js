// The whole view in the URL's query string, under the controls' own names, so a link restores
// exactly what its sender saw. Values are read by the core's parsers and checked by the core; one
// that is unknown or refused is dropped with a notice, and the rest of the URL still applies.
import { FURTHER_CONTROLS, getIn, setIn } from './state.js';

/** The plate's controls, then "Go further"'s: URL key, setup path, how the value is read. */
const URL_CONTROLS = Object.freeze([
  { id: 'model', path: ['modelId'], read: 'text' },
  { id: 'flash-attention', path: ['flashAttention'], read: 'check' },
  ...FURTHER_CONTROLS,
]);
const TOKENS_KEY = 'tokens';
const CONFIG_KEY = 'config';
const EMBED_KEY = 'embed';
const SHOWN_VALUE_LENGTH = 40;

/** The core names a refused field by its control id; the micro-batch is the tokens control. */
const keyForField = (field) => (field === 'micro-batch' ? TOKENS_KEY : field);

function shown(text) {
  return text.length > SHOWN_VALUE_LENGTH ? `${text.slice(0, SHOWN_VALUE_LENGTH)}…` : text;
}

function readValue(estimator, control, text) {
  if (control.read === 'check') {
    if (text === 'on') return true;
    if (text === 'off') return false;
    return undefined;
  }
  if (control.read === 'whole') return estimator.parseWholeNumber(text);
  if (control.read === 'decimal') return estimator.parseDecimal(text);
  return text;
}

/**
 * The query string for `state`: every control, embed=1 when embedded, and for a model read from a
 * config.json, that config's text (minified), which the core reads again when the link opens.
 */
export function toQuery(state, estimate, embedded, configText) {
  const params = new URLSearchParams();
  if (embedded) params.set(EMBED_KEY, '1');
  params.set('model', state.modelId);
  if (configText) params.set(CONFIG_KEY, configText);
  params.set(TOKENS_KEY, String(estimate.tokensPerMicroBatch));
  params.set('flash-attention', state.flashAttention ? 'on' : 'off');
  for (const control of FURTHER_CONTROLS) {
    const value = getIn(state, control.path);
    params.set(control.id, control.read === 'check' ? (value ? 'on' : 'off') : String(value));
  }
  return `?${params}`;
}

/** Whether the query asks for the embedded view. */
export function isEmbedded(search) {
  return new URLSearchParams(search).get(EMBED_KEY) === '1';
}

/**
 * The state a query describes, on the core's defaults, with a notice for each value dropped. A
 * custom model comes back as `configText`, for the caller to have the core read (asynchronously).
 * @returns {{state: object, notices: string[], configText: string | null}}
 */
export function fromQuery(search, estimator, maxMicroBatchSequences) {
  const params = new URLSearchParams(search);
  const configText = params.get('model') === estimator.customModelId ? params.get(CONFIG_KEY) : null;
  if (configText !== null) params.delete('model');
  const defaults = estimator.defaultSetup;
  const notices = [];
  const given = new Map();
  let state = { ...defaults };

  for (const [key, text] of params) {
    if (key === EMBED_KEY || key === TOKENS_KEY || key === CONFIG_KEY) continue;
    const control = URL_CONTROLS.find((candidate) => candidate.id === key);
    if (!control) {
      notices.push(`Ignored the unknown setting “${shown(key)}”.`);
      continue;
    }
    const value = readValue(estimator, control, text);
    if (value === undefined) {
      notices.push(`Ignored ${key}=“${shown(text)}”: use on or off.`);
      continue;
    }
    given.set(key, text);
    state = setIn(state, control.path, value);
  }

  // Drop what the core refuses, one field at a time, until the rest is a valid setup.
  for (let attempt = 0; attempt <= URL_CONTROLS.length; attempt += 1) {
    const estimate = estimator.estimate(state);
    if (estimate.ok) break;
    const control = URL_CONTROLS.find((candidate) => candidate.id === keyForField(estimate.invalidField));
    if (!control || !given.has(control.id)) {
      notices.push(`Ignored the link's settings: ${estimate.message}`);
      state = { ...defaults };
      break;
    }
    notices.push(`Ignored ${control.id}=“${shown(given.get(control.id))}”: ${estimate.message}`);
    given.delete(control.id);
    state = setIn(state, control.path, getIn(defaults, control.path));
  }

  if (params.has(TOKENS_KEY)) {
    const text = params.get(TOKENS_KEY);
    const parsed = estimator.microBatchFromTokens(
      estimator.parseDecimal(text),
      state.sequenceLength,
      maxMicroBatchSequences,
    );
    if (parsed.ok) state = { ...state, microBatchSequences: parsed.microBatchSequences };
    else notices.push(`Ignored tokens=“${shown(text)}”: ${parsed.message}`);
  }
  return { state, notices, configText };
}
