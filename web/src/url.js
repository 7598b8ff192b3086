// The whole view in the URL's query string, under the settings' own ids (the core's table), so a
// link restores exactly what its sender saw. Values are read and checked by the core, as the CLI
// reads its flags; one that is unknown or refused is dropped with a notice, and the rest of the URL
// still applies.
import { byWhom } from './format.js';

const EMBED_KEY = 'embed';
const THEME_KEY = 'theme';
/** The keys that say how the page is shown, not what it shows. */
export const PRESENTATION_KEYS = Object.freeze([EMBED_KEY, THEME_KEY]);
/** The page's colours: the reader's system setting, or what the host page asks for. */
export const THEMES = Object.freeze(['auto', 'light', 'dark']);
const SHOWN_VALUE_LENGTH = 40;

function shown(text) {
  return text.length > SHOWN_VALUE_LENGTH ? `${text.slice(0, SHOWN_VALUE_LENGTH)}…` : text;
}

const linked = (estimator) => estimator.settings.filter((setting) => setting.inUrl);

/**
 * The query string for a view: how the page is shown (embed=1, a theme other than auto), every
 * setting a link carries (its text, from the view's `settingTexts`), and for a model read from a
 * config.json, that config's text (minified), which the core reads again when the link opens.
 */
export function toQuery(estimator, settingTexts, { embedded, theme }, configText) {
  const params = new URLSearchParams();
  if (embedded) params.set(EMBED_KEY, '1');
  if (theme !== THEMES[0]) params.set(THEME_KEY, theme);
  for (const setting of linked(estimator)) {
    params.set(setting.id, settingTexts[setting.id]);
    if (setting.id === estimator.modelSettingId && configText)
      params.set(estimator.configInputId, configText);
  }
  return `?${params}`;
}

/**
 * The query string for the store's `state` (its setup, the core's view of it, a custom model's
 * config text), shown as `presentation` asks: the address bar's, and the embed snippet's.
 */
export function viewQuery(estimator, { setup, view, configText }, presentation) {
  const custom = setup.modelId === estimator.customModelId;
  return toQuery(estimator, view.settingTexts, presentation, custom ? configText : null);
}

/**
 * How the query asks the page to be shown, read before the estimator loads: embedded (embed=1,
 * the workshop alone, for a host page's frame) and its theme, with a notice for a theme that is
 * not one of THEMES.
 * @returns {{embedded: boolean, theme: string, notices: string[]}}
 */
export function readPresentation(search) {
  const params = new URLSearchParams(search);
  const asked = params.get(THEME_KEY) ?? THEMES[0];
  const known = THEMES.includes(asked);
  return {
    embedded: params.get(EMBED_KEY) === '1',
    theme: known ? asked : THEMES[0],
    notices: known ? [] : [`Ignored ${THEME_KEY}=“${shown(asked)}”: use ${THEMES.join(', ')}.`],
  };
}

/**
 * The setup a query describes, on the core's defaults, with a notice for each value dropped. A
 * custom model comes back as `configText`, for the caller to have the core read (asynchronously).
 * `linked`: whether the query set any setting.
 * @returns {{setup: object, notices: string[], configText: string | null, linked: boolean}}
 */
export function fromQuery(search, estimator, maxMicroBatchSequences) {
  const params = new URLSearchParams(search);
  const notices = [];
  const given = new Map();
  let configText = null;
  for (const [key, text] of params) {
    if (key === EMBED_KEY || key === THEME_KEY || key === estimator.configInputId) continue;
    const setting = estimator.settings.find((candidate) => candidate.id === key && candidate.inUrl);
    if (!setting) notices.push(`Ignored the unknown setting “${shown(key)}”.`);
    else if (setting.id === estimator.modelSettingId && text === estimator.customModelId) {
      configText = params.get(estimator.configInputId);
      if (configText === null)
        notices.push(`Ignored ${key}=“${shown(text)}”: the link carries no config.json.`);
    } else given.set(key, text);
  }

  // Each value in the table's order (tokens after the sequence length), read as the CLI reads it.
  const read = (setup) => {
    let result = setup;
    for (const setting of linked(estimator)) {
      if (!given.has(setting.id)) continue;
      const change = estimator.changeSetting(
        result,
        setting.id,
        given.get(setting.id),
        maxMicroBatchSequences,
      );
      if (change.ok) result = change.setup;
      else {
        notices.push(`Ignored ${setting.id}=“${shown(given.get(setting.id))}”: ${change.message}`);
        given.delete(setting.id);
      }
    }
    return result;
  };
  // Then what the stack runs where the link chose nothing (its loss, verl's defaults), as the CLI
  // brings it, said in words.
  let brought = [];
  const readWithStack = (setup) => {
    ({ setup, brought } = estimator.bringStackDefaults(read(setup), [...given.keys()]));
    return setup;
  };
  const defaults = estimator.defaultSetup;
  let setup = readWithStack(defaults);

  // Then drop what the core refuses of the whole, one setting at a time, until the rest is valid.
  for (let attempt = 0; attempt <= estimator.settings.length; attempt += 1) {
    const estimate = estimator.estimate(setup);
    if (estimate.ok) break;
    if (!given.has(estimate.invalidField)) {
      notices.push(`Ignored the link's settings: ${estimate.message}`);
      setup = defaults;
      break;
    }
    notices.push(
      `Ignored ${estimate.invalidField}=“${shown(given.get(estimate.invalidField))}”: ${estimate.message}`,
    );
    given.delete(estimate.invalidField);
    setup = readWithStack(defaults);
  }
  // One sentence for each who brought settings (the stack, verl), in the core's order.
  if (brought[0] && setup !== defaults) {
    for (const [by, settings] of byWhom(brought)) {
      const named = settings.map((b) => `${b.settingId}=${b.text}`);
      notices.push(`${by} brings, for the link: ${named.join(', ')}.`);
    }
  }
  return { setup, notices, configText, linked: given.size > 0 || configText !== null };
}

const URL_WRITE_DELAY_MS = 200;

/**
 * The one writer of the address bar: it keeps the URL on the view without a history entry per
 * change. During a slider drag the write waits for a pause: replaceState costs milliseconds, more
 * than a redraw's budget.
 * @returns {(state: object, how: {dragging?: boolean}) => void} a store listener
 */
export function createUrlWriter(estimator, presentation) {
  let timer = 0;
  const write = (state) => {
    try {
      history.replaceState(null, '', viewQuery(estimator, state, presentation));
    } catch {
      // Some hosts (a file:// page in some browsers) refuse; the view still works.
    }
  };
  return (state, how) => {
    clearTimeout(timer);
    if (how.dragging) timer = setTimeout(() => write(state), URL_WRITE_DELAY_MS);
    else write(state);
  };
}
