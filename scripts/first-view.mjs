// The plate's default view, written into index.html at build time: the figures the prose quotes,
// the readout, the charts' titles and notes as text (so the page reads with scripts off), and the
// charts' data (chart-data.js) with the words for their ticks, which app.js draws before the
// WebAssembly arrives. Every figure comes from the core, run here under Node; the words come from
// the page's own functions (readout.js), so that the first view and the live one cannot differ.
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { chartData } from '../web/src/chart-data.js';
import { makeEstimator } from '../web/src/estimator.js';
import { breakdownTitle, describe, describeRoom, plateFigures } from '../web/src/readout.js';
import { MAX_MICRO_BATCH_SEQUENCES } from '../web/src/store.js';

/** Text for HTML: the three characters that could be read as markup, escaped. */
const escapeText = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * `html` with the text of the one element `opening` matches replaced by `text`; throws unless
 * exactly one matches, so that a renamed element fails the build rather than the first view.
 */
function setText(html, opening, text, closing) {
  const pattern = new RegExp(`(${opening.source})[^<]*(</${closing}>)`, 'g');
  const count = [...html.matchAll(pattern)].length;
  if (count !== 1) throw new Error(`first view: ${count} elements match ${opening.source} in index.html`);
  return html.replace(pattern, (_, open, close) => `${open}${escapeText(text)}${close}`);
}

/** The core, loaded under Node from build-wasm/, as the page's estimator. */
export async function loadCoreForNode(wasmModule, wasmBinary) {
  const createTrainmemModule = createRequire(import.meta.url)(wasmModule);
  return makeEstimator(await createTrainmemModule({ wasmBinary: await readFile(wasmBinary) }));
}

/** index.html's text with the default view written in. */
export function writeFirstView(html, estimator) {
  const view = estimator.workshopView(estimator.defaultSetup, MAX_MICRO_BATCH_SEQUENCES);
  if (!view.ok) throw new Error(`first view: the core refused the default setup: ${view.message}`);
  const { estimate } = view;
  let page = html;
  for (const [name, figure] of Object.entries(plateFigures(estimator))) {
    page = page.replaceAll(
      new RegExp(`(<span data-figure="${name}">)[^<]*(</span>)`, 'g'),
      (_, open, close) => `${open}${escapeText(figure)}${close}`,
    );
  }
  page = setText(
    page,
    /<p class="readout" id="readout"[^>]*>/,
    describe(estimator, estimate, view.logitsLeftOut),
    'p',
  );
  page = setText(
    page,
    /<p class="chart-note" id="activations-note">/,
    describeRoom(estimator, estimate),
    'p',
  );
  page = setText(page, /<figcaption id="breakdown-title">/, breakdownTitle(estimate), 'figcaption');

  const charts = chartData(view, null, estimator.terms);
  const words = (values, format) => Object.fromEntries(values.map((value) => [String(value), format(value)]));
  const firstView = {
    charts,
    labels: {
      bytes: words([...charts.breakdownTicks, ...charts.activationTicks], estimator.formatBytesShort),
      tokens: words(charts.tokenTicks, estimator.formatCount),
    },
  };
  // JSON in the data block before app.js: '<' escaped so that no text inside can close it.
  const json = JSON.stringify(firstView).replace(/</g, '\\u003c');
  const empty = '<script type="application/json" id="first-view"></script>';
  if (page.split(empty).length !== 2)
    throw new Error('first view: index.html needs one empty #first-view block');
  return page.replace(empty, () => `<script type="application/json" id="first-view">${json}</script>`);
}
