// The workshop (workshop.js, loaded by app.js once the charts are up): a control -> the store's
// setup -> one call into the core (workshopView) -> the charts, the readout, the controls, the open
// panels and the URL, each a listener of the store. Nothing here computes a figure; the core does.
// It starts over the first view's module (the plate's view alone); a reader who goes further (Go
// further opened, or a link that carries more than the plate's settings) brings the full module
// and further.js, and the same estimator goes on over it.
import { chartData } from './chart-data.js';
import { createChoices } from './choices.js';
import { createControls, showError, showNotice } from './controls.js';
import { $, addScript, addStyle, onOpen } from './dom.js';
import { loadEstimator, loadFullTools, loadYamlTools, upgradeEstimator } from './estimator.js';
import { createComparePanel } from './panels/compare.js';
import { createExports } from './panels/exports.js';
import { createNumbersPanel } from './panels/numbers.js';
import { fillPlateFigures, plateFigures, showReadout } from './readout.js';
import { createStore, MAX_MICRO_BATCH_SEQUENCES } from './store.js';
import { createUrlWriter, fromQuery, PRESENTATION_KEYS } from './url.js';

/**
 * Whether a query asks for more than the plate's view: a key that is not one of the first view's
 * settings (`settings`, the plate's module's table) nor how the page is shown. The full module
 * reads it; an unknown key is then refused there, with a notice.
 */
function goesFurther(search, settings) {
  const plate = new Set(settings.map((setting) => setting.id));
  return [...new URLSearchParams(search).keys()].some(
    (key) => !plate.has(key) && !PRESENTATION_KEYS.includes(key),
  );
}

async function start() {
  // app.js, which loaded this script, ran mid-page: the rest of it may still be on its way.
  if (document.readyState === 'loading') {
    await new Promise((resolve) => document.addEventListener('DOMContentLoaded', resolve, { once: true }));
  }
  // The charts, the theme and the embedded layout are app.js's (first-view.js).
  const { charts, createTimelineChart, presentation } = globalThis.trainmemPage;
  performance.mark('trainmem:core-start');
  let estimator;
  try {
    estimator = await loadEstimator();
    // A link beyond the plate's view is read by the full module, which answers it.
    if (goesFurther(location.search, estimator.settings)) await upgradeEstimator(estimator);
  } catch (error) {
    $('readout').textContent =
      `The estimator could not load (${error.message}). Reload the page to try again.`;
    return;
  }
  performance.measure('trainmem:core', 'trainmem:core-start');
  charts.setFormatters({
    formatBytes: estimator.formatBytes,
    formatBytesShort: estimator.formatBytesShort,
    formatCount: estimator.formatCount,
  });
  fillPlateFigures(plateFigures(estimator));

  const fromLink = fromQuery(location.search, estimator, MAX_MICRO_BATCH_SEQUENCES);
  showNotice([...presentation.notices, ...fromLink.notices].join(' '));

  const store = createStore({});
  const choices = createChoices(estimator);
  // A link restores what its sender saw: nothing in it changes unless the reader changes it.
  if (fromLink.linked) choices.touchAll();
  /**
   * Draws `next` if the core accepts it, with every pending choice it now lets in, and whatever
   * else `extra` sets in the store (the config text) or says of the change (a slider drag;
   * `reveal`: a button far from the workshop asked for it, so the readout, which screen readers
   * announce, is brought into view); returns the sentences it said of what else changed.
   * Otherwise keeps the last good view, says why (beside the control at fault, or under
   * `refusedAt.field` with its `prefix`, for a change made from afar), and returns null.
   */
  function render(next, extra = {}) {
    const { dragging = false, reveal = false, refusedAt = null, ...patch } = extra;
    const settled = choices.settle(store.get().setup, next);
    if (!settled.view.ok) {
      if (refusedAt) showError(refusedAt.field, `${refusedAt.prefix}${settled.view.message}`);
      else showError(settled.view.invalidField, settled.view.message);
      return null;
    }
    showError('', '');
    store.set({ ...patch, setup: settled.setup, view: settled.view }, { dragging });
    if (settled.said.length > 0) showNotice(settled.said.join(' '));
    if (reveal) $('readout').scrollIntoView({ block: 'center' });
    return settled.said;
  }

  const context = {
    estimator,
    store,
    render,
    showError,
    showNotice,
    choices,
    createControls,
    createTimelineChart,
    loadFullTools,
    loadYamlTools,
  };
  const controls = createControls({ ...context, root: $('controls') });
  // The numbers redraw while they are open, and when they open; the comparison always.
  const numbers = createNumbersPanel(context);
  onOpen(numbers.element, () => numbers.update(store.get()));
  const compare = createComparePanel(context);
  const writeUrl = createUrlWriter(estimator, presentation);
  let further = null; // Go further, once it is in place: {update(state, how), openConfig(text)}
  // A link that carries Go further's settings opens it before the page says it is ready.
  const linkOpensFurther = estimator.full && (!presentation.embedded || fromLink.configText !== null);
  store.subscribe((state, how) => {
    controls.sync(state.setup, state.view);
    showReadout(estimator, state.view);
    charts.draw(chartData(state.view, state.pinned, estimator.terms, compare.barLabels(state)));
    if (numbers.element.open) numbers.update(state);
    compare.update(state);
    further?.update(state, how);
    writeUrl(state, how);
    if (!linkOpensFurther || further) document.body.dataset.ready = 'true';
  });
  createExports({ ...context, charts });

  /**
   * The full module under the page, with the view redrawn by it: the setup and the pinned
   * estimate (made by the first view's module, which names the plate's settings alone) take the
   * full core's defaults for the rest.
   */
  async function goFurther() {
    if (estimator.full) return;
    await upgradeEstimator(estimator);
    const full = (setup) => ({
      ...estimator.defaultSetup,
      ...setup,
      layout: { ...estimator.defaultSetup.layout, ...setup.layout },
    });
    const { setup, pinned } = store.get();
    const next = full(setup);
    const view = estimator.workshopView(next, MAX_MICRO_BATCH_SEQUENCES);
    const repinned = pinned && estimator.workshopView(full(pinned.setup), MAX_MICRO_BATCH_SEQUENCES);
    store.set({ setup: next, view, pinned: repinned?.ok ? repinned.estimate : null });
  }

  const opener = $('open-further');
  const status = $('further-status');
  let opening = null;
  let styled = null; // Go further's sheet, asked for once
  /** Go further in place (its code, its body and the full module), once; a failure is said. */
  function openFurther() {
    opening ??= (async () => {
      opener.setAttribute('aria-expanded', 'true');
      opener.disabled = true;
      status.textContent = 'Loading…';
      try {
        await Promise.all([
          goFurther(),
          globalThis.trainmemFurther ? Promise.resolve() : addScript('further.js'),
          (styled ??= addStyle('further.css').catch((error) => {
            styled = null; // asked for again on the next try
            throw error;
          })),
        ]);
        further = globalThis.trainmemFurther.start(context);
        fillPlateFigures(plateFigures(estimator), $('further-body'));
        $('further-body').hidden = false;
        opener.closest('p').hidden = true;
        status.textContent = '';
        store.set({});
      } catch (error) {
        status.textContent = `Go further could not load (${error.message}). Try again.`;
        opener.setAttribute('aria-expanded', 'false');
        opener.disabled = false;
        opening = null;
        throw error;
      }
    })();
    return opening;
  }
  opener.addEventListener('click', () => openFurther().catch(() => {}));
  // From the charts to an explanation in Go further, in one click: Go further opens if it is not
  // open, then the explanation, brought into view with its summary focused.
  for (const button of document.querySelectorAll('[data-opens]')) {
    button.addEventListener('click', async () => {
      const said = $('explained-status');
      said.textContent = further ? '' : 'Loading…';
      try {
        await openFurther();
      } catch (error) {
        said.textContent = `The explanations could not load (${error.message}). Try again.`;
        return;
      }
      said.textContent = '';
      const panel = $(button.dataset.opens);
      panel.open = true;
      panel.scrollIntoView({ block: 'start' });
      panel.querySelector('summary').focus({ preventScroll: true });
    });
  }

  for (const form of document.querySelectorAll('form')) {
    form.addEventListener('submit', (event) => event.preventDefault());
  }

  performance.mark('trainmem:first-estimate-start');
  render(fromLink.setup);
  performance.measure('trainmem:first-estimate', 'trainmem:first-estimate-start');
  performance.mark('trainmem:core-ready');
  // A link that carries Go further's settings shows them (unless the page is embedded, which
  // shows the workshop alone); a custom model's config.json is read by its panel there.
  if (linkOpensFurther) {
    await openFurther().catch(() => {
      document.body.dataset.ready = 'true';
    });
    if (fromLink.configText !== null) further?.openConfig(fromLink.configText);
  }
}

start();
