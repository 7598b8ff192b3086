// The workshop (workshop.js, loaded by app.js once the charts are up): a control -> the store's
// setup -> one call into the core (workshopView) -> the charts, the readout, the controls, the open
// panels and the URL, each a listener of the store. Nothing here computes a figure; the core does.
import { chartData } from './chart-data.js';
import { createChoices } from './choices.js';
import { createControls, showError, showNotice } from './controls.js';
import { $, onOpen } from './dom.js';
import { loadEstimator } from './estimator.js';
import { createLaterPanels, preload } from './later-panels.js';
import { createComparePanel } from './panels/compare.js';
import { createConfigPanel } from './panels/config.js';
import { createExports } from './panels/exports.js';
import { createLaunchPanel } from './panels/launch.js';
import { createNumbersPanel } from './panels/numbers.js';
import { fillPlateFigures, plateFigures, showReadout } from './readout.js';
import { createStore, MAX_MICRO_BATCH_SEQUENCES } from './store.js';
import { createUrlWriter, fromQuery } from './url.js';

/** The settings the QLoRA way in sets, by id, each with its choice's text. */
const QLORA_WAY_IN = Object.freeze([
  ['device', 'rtx-4090'],
  ['lora-rank', '16'],
  ['lora-targets', 'all-linear'],
  ['base-weights', 'nf4'],
  ['recompute', 'full'],
]);

/** "Go further", kept out of the first view as a template (index.html), put in its place. */
function placeFurther() {
  const template = $('further-template');
  template.replaceWith(template.content);
}

async function start() {
  // app.js, which loaded this script, ran mid-page: the rest of it may still be on its way.
  if (document.readyState === 'loading') {
    await new Promise((resolve) => document.addEventListener('DOMContentLoaded', resolve, { once: true }));
  }
  // The charts, the theme and the embedded layout are app.js's (first-view.js).
  const { charts, createTimelineChart, presentation } = globalThis.trainmemPage;
  placeFurther();
  performance.mark('trainmem:core-start');
  let estimator;
  try {
    estimator = await loadEstimator();
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

  const context = { estimator, store, render, showError, createTimelineChart };
  const controls = createControls({ ...context, choices });
  const config = createConfigPanel(context);
  const launch = createLaunchPanel({ ...context, choices });
  // The numbers redraw while they are open, and when they open; the comparison always.
  const numbers = createNumbersPanel(context);
  onOpen(numbers.element, () => numbers.update(store.get()));
  const compare = createComparePanel(context);
  // The exploration views: their panels' code and module load when a reader points at one, or
  // tabs to it, about to open it (a failure is said, and retried, by the view that asks).
  const later = createLaterPanels(context);
  for (const element of document.querySelectorAll('details.arithmetic > summary, #find-fit')) {
    for (const type of ['pointerenter', 'focus']) {
      element.addEventListener(type, preload, { once: true });
    }
  }
  const writeUrl = createUrlWriter(estimator, presentation);
  store.subscribe((state, how) => {
    controls.sync(state.setup, state.view);
    showReadout(estimator, state.view);
    charts.draw(chartData(state.view, state.pinned, estimator.terms));
    if (numbers.element.open) numbers.update(state);
    compare.update(state);
    launch.update(state, how);
    later.update(state, how);
    writeUrl(state, how);
    document.body.dataset.ready = 'true';
  });
  createExports({ ...context, charts });

  // Back to the plate's view: every setting under "Go further" to its default.
  $('reset-further').addEventListener('click', () => {
    let setup = store.get().setup;
    const further = estimator.settings.filter((setting) => $('further-controls').contains($(setting.id)));
    choices.forget(further.map((setting) => setting.id));
    for (const setting of further) {
      setup = estimator.changeSetting(
        setup,
        setting.id,
        setting.defaultText,
        MAX_MICRO_BATCH_SEQUENCES,
      ).setup;
    }
    render(setup);
  });
  // A way in for a fine-tuner: QLoRA as most fine-tuning on one consumer GPU runs it (adapters
  // on every linear layer, the base in NF4, gradient checkpointing) on a 24 GB GPU, each setting
  // the reader's from then on, and said in words.
  $('try-qlora').addEventListener('click', () => {
    let setup = store.get().setup;
    const set = [];
    for (const [id, text] of QLORA_WAY_IN) {
      const change = estimator.changeSetting(setup, id, text, MAX_MICRO_BATCH_SEQUENCES);
      if (!change.ok) continue;
      setup = change.setup;
      choices.touch(id);
      set.push(choices.named(id, text));
    }
    const said = render(setup, { reveal: true });
    if (said === null) return;
    showNotice(
      [
        `Set for fine-tuning with QLoRA: ${set.join('; ')}. Change any of them under Fine-tuning, Device and Recipe.`,
        ...said,
      ].join(' '),
    );
    $('fine-tuning').focus({ preventScroll: true });
  });
  for (const form of document.querySelectorAll('form')) {
    form.addEventListener('submit', (event) => event.preventDefault());
  }

  performance.mark('trainmem:first-estimate-start');
  render(fromLink.setup);
  performance.measure('trainmem:first-estimate', 'trainmem:first-estimate-start');
  performance.mark('trainmem:core-ready');
  if (fromLink.configText !== null) config.open(fromLink.configText);
}

start();
