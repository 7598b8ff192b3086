// The controls, from the core's table of settings: every element whose id is a setting's id reads
// and shows that setting, through the core (changeSetting, and the view's settingTexts). index.html only places
// and labels them; the slider names the setting it moves in its data-setting attribute.
import { $, put } from './dom.js';
import { MAX_MICRO_BATCH_SEQUENCES } from './store.js';

/** The settings that have a control on the page, each with its element. */
function placed(estimator) {
  return estimator.settings
    .map((setting) => ({ setting, element: $(setting.id) }))
    .filter(({ element }) => element);
}

/** Shows `text` in the workshop's notice, or hides it when `text` is empty. */
export function showNotice(text) {
  const notice = $('url-notice');
  notice.textContent = text;
  notice.hidden = !text;
}

/** Whether a message may be showing: until the first call clears them, any the page was built with. */
let messageShown = true;

/**
 * Shows `message` by the control of setting `field` (or clears every message). While a message
 * shows, the readout and the charts are marked as still showing the last valid settings.
 */
export function showError(field, message) {
  // Every accepted change clears the messages: where none shows, a drag touches no element.
  if (!message && !messageShown) return;
  messageShown = Boolean(message);
  $('stale-note').hidden = !message;
  document.body.classList.toggle('stale', Boolean(message));
  for (const element of document.querySelectorAll('.error')) {
    element.textContent = '';
    element.hidden = true;
  }
  for (const element of document.querySelectorAll('[aria-invalid="true"]')) {
    element.setAttribute('aria-invalid', 'false');
  }
  if (!message) return;
  // A setting with no message box of its own (the model, the micro-batch) speaks in the workshop's.
  const box = $(`${field}-error`) ?? document.querySelector('[data-error-default]');
  box.textContent = message;
  box.hidden = false;
  $(field)?.setAttribute('aria-invalid', 'true');
}

/**
 * Wires every control: a change is read by the core and drawn by `render` (which returns whether
 * the core accepted it), or refused with its message by the control.
 */
export function createControls({ estimator, store, render }) {
  const { SWITCH, CHOICE } = estimator.settingKinds;
  const controls = placed(estimator);
  const slider = $('tokens-slider');
  const model = controls.find(({ setting }) => setting.id === estimator.modelSettingId);

  // Each option carries its choice's source as its title: a device's datasheet, a recipe's paper.
  const option = (choice) => Object.assign(new Option(choice.name, choice.id), { title: choice.source });
  for (const { setting, element } of controls) {
    if (setting.kind === CHOICE && element.tagName === 'SELECT' && element !== model?.element) {
      element.replaceChildren(...setting.choices.map(option));
    }
  }
  slider.max = String(MAX_MICRO_BATCH_SEQUENCES);

  /**
   * Reads `text` as setting `id` of the current setup; draws it or says why not. A setting the
   * changed one keeps (the tokens, when the sequence length changes) keeps its value if it can,
   * and the notice says so when it cannot.
   */
  function change(id, text, how) {
    const { setup, view } = store.get();
    const read = (from, settingId, settingText) =>
      estimator.changeSetting(from, settingId, settingText, MAX_MICRO_BATCH_SEQUENCES);
    const result = read(setup, id, text);
    if (!result.ok) {
      showError(result.invalidField, result.message);
      return;
    }
    let next = result.setup;
    const kept = estimator.settings.find((setting) => setting.id === id)?.keeps;
    const before = kept ? view.settingTexts[kept] : '';
    const keeping = kept ? read(next, kept, before) : null;
    if (keeping?.ok) next = keeping.setup;
    if (!render(next, how)) return;
    // What the new view holds of the kept setting, which the core read with the rest.
    const after = kept ? store.get().view.settingTexts[kept] : '';
    const shown = (value) => (Number.isFinite(Number(value)) ? estimator.formatCount(Number(value)) : value);
    const name = kept ? estimator.settings.find((setting) => setting.id === kept).name : '';
    showNotice(
      after !== before ? `${name} is now ${shown(after)}, not ${shown(before)}: ${keeping.message}` : '',
    );
  }

  // Typed values are committed on Enter or when the field loses focus.
  for (const { setting, element } of controls) {
    element.addEventListener('change', () =>
      change(setting.id, setting.kind === SWITCH ? (element.checked ? 'on' : 'off') : element.value.trim()),
    );
  }
  slider.addEventListener('input', () => change(slider.dataset.setting, slider.value, { dragging: true }));
  // The end of a drag (or a key press) writes the URL at once.
  slider.addEventListener('change', () => change(slider.dataset.setting, slider.value));

  let modelOptionsFor; // the custom model's name the menu was built for (null: none; unset: not yet)

  /**
   * Shows `setup` in every control, from the texts its view carries (no call per setting); a
   * control whose setting needs another is off meanwhile.
   */
  function sync(setup, view) {
    const { estimate } = view;
    const text = (id) => view.settingTexts[id];
    if (model) {
      // The presets, and a model read from a config.json under its own name: rebuilt when that
      // name changes, not on every redraw.
      const custom = setup.modelId === estimator.customModelId ? setup.customModel.name : null;
      if (custom !== modelOptionsFor) {
        const options = estimator.presets.map((preset) => new Option(preset.name, preset.id));
        if (custom !== null) options.push(new Option(`${custom} (config.json)`, estimator.customModelId));
        model.element.replaceChildren(...options);
        modelOptionsFor = custom;
      }
    }
    for (const { setting, element } of controls) {
      if (setting.kind === SWITCH) put(element, 'checked', text(setting.id) === 'on');
      else put(element, 'value', text(setting.id));
      if (setting.requiresSetting) {
        put(element, 'disabled', text(setting.requiresSetting) !== setting.requiresValue);
      }
    }
    put(slider, 'value', text(slider.dataset.setting));
    const tokens = `${estimator.formatCount(estimate.tokensPerMicroBatch)} tokens`;
    if (slider.getAttribute('aria-valuetext') !== tokens) slider.setAttribute('aria-valuetext', tokens);
    put(
      $('tokens-hint'),
      'textContent',
      `Whole sequences of ${estimator.formatCount(estimate.setup.sequenceLength)} tokens, ` +
        `1 to ${MAX_MICRO_BATCH_SEQUENCES} of them.`,
    );
  }

  return { sync };
}
