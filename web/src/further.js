// "Go further" (further.js), loaded with the full module when a reader opens it or a link carries
// its settings (main.js): its body, written at build time from web/further.html with each
// setting's control from the core's table, put in place; its controls; the config.json and
// launch-config panels; the exploration views' panels; and its two buttons. The first view needs
// none of it. What it shares with the workshop (the controls' messages, the module loaders) comes in
// `context`, so that both speak through one of each.
import { $ } from './dom.js';
import { createLaterPanels, preload } from './later-panels.js';
import { createConfigPanel } from './panels/config.js';
import { createLaunchPanel } from './panels/launch.js';
import { MAX_MICRO_BATCH_SEQUENCES } from './store.js';

/** The settings the QLoRA way in sets, by id, each with its choice's text. */
const QLORA_WAY_IN = Object.freeze([
  ['device', 'rtx-4090'],
  ['lora-rank', '16'],
  ['lora-targets', 'all-linear'],
  ['base-weights', 'nf4'],
  ['recompute', 'full'],
]);

/** Go further's body: web/further.html with the settings' controls, as the build wrote it in. */
const BODY = globalThis.FURTHER_HTML;

/**
 * Puts Go further in place over `context` ({estimator, store, render, showError, showNotice,
 * choices, createControls, createTimelineChart, loadFullTools, loadYamlTools}), the estimator
 * already the full one. Returns {update(state, how)}, for the store, and {openConfig(text)}.
 */
function start(context) {
  const { estimator, store, render, choices, showNotice } = context;
  const body = $('further-body');
  // The build's own HTML (web/further.html), never a reader's text.
  body.innerHTML = BODY;
  const controls = context.createControls({ ...context, root: $('further-controls') });
  const config = createConfigPanel(context);
  const launch = createLaunchPanel(context);
  // The exploration views: their panels' code loads when a reader points at one, or tabs to it,
  // about to open it (a failure is said, and retried, by the view that asks).
  const later = createLaterPanels(context);
  for (const element of body.querySelectorAll('details.arithmetic > summary, #find-fit')) {
    for (const type of ['pointerenter', 'focus']) {
      element.addEventListener(type, preload, { once: true });
    }
  }

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
  for (const form of body.querySelectorAll('form')) {
    form.addEventListener('submit', (event) => event.preventDefault());
  }

  return {
    update(state, how) {
      controls.sync(state.setup, state.view);
      launch.update(state, how);
      later.update(state, how);
    },
    openConfig: (text) => config.open(text),
  };
}

globalThis.trainmemFurther = Object.freeze({ start });
