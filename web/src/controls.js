// The controls, from the core's table of settings: every element whose id is a setting's id reads
// and shows that setting, through the core (changeSetting, and the view's settingTexts). index.html only places
// and labels them; the slider names the setting it moves in its data-setting attribute.
import { $, put } from './dom.js';
import { tokensInSequences } from './format.js';
import { MAX_MICRO_BATCH_SEQUENCES } from './store.js';

/** The settings that have a control inside `root`, each with its element. */
function placed(estimator, root) {
  return estimator.settings
    .map((setting) => ({ setting, element: $(setting.id) }))
    .filter(({ element }) => element && root.contains(element));
}

/** Shows `text` in the workshop's notice, or hides it when `text` is empty. */
export function showNotice(text) {
  const notice = $('url-notice');
  notice.textContent = text;
  notice.hidden = !text;
}

/** Whether a message may be showing: until the first call clears them, any the page was built with. */
let messageShown = true;
/** The latest input refused, {field, message}, until the next accepted change; or null. */
let refusal = null;
/** The reader's pending choices, as createControls's `choices` holds them. */
let pendingChoices = () => [];

/** "Not applied yet", with why, by each pending choice's control; and the latest refusal by its own. */
function showMessages() {
  const messages = pendingChoices().map(([id, entry]) => ({
    field: id,
    text: `Not applied yet: ${entry.message} It applies by itself once the rest allows it.`,
    pending: true,
  }));
  if (refusal) messages.push({ field: refusal.field, text: refusal.message });
  // Every accepted change clears the messages: where none shows, a drag touches no element.
  if (messages.length === 0 && !messageShown) return;
  messageShown = messages.length > 0;
  $('stale-note').hidden = !messageShown;
  // The note names the first field at fault, and links to it.
  const fault = messages[0]?.field;
  const label = fault && document.querySelector(`label[for="${fault}"]`);
  if (label) {
    $('stale-field').textContent = label.textContent.trim();
    $('stale-field').href = `#${fault}`;
  }
  document.body.classList.toggle('stale', messageShown);
  for (const element of document.querySelectorAll('.error')) {
    element.textContent = '';
    element.hidden = true;
  }
  for (const element of document.querySelectorAll('[aria-invalid="true"]')) {
    element.setAttribute('aria-invalid', 'false');
  }
  for (const element of document.querySelectorAll('[data-pending]')) delete element.dataset.pending;
  for (const { field, text, pending } of messages) {
    // A setting with no message box of its own (the model, the micro-batch) speaks in the workshop's.
    const box = $(`${field}-error`) ?? document.querySelector('[data-error-default]');
    box.textContent = box.hidden ? text : `${box.textContent} ${text}`;
    box.hidden = false;
    $(field)?.setAttribute('aria-invalid', 'true');
    if (pending && $(field)) $(field).dataset.pending = 'true';
  }
}

/**
 * Shows `message` by the control of setting `field` (or clears it), beside any pending choice's.
 * While a message shows, the readout and the charts are marked as still showing the last valid
 * settings.
 */
export function showError(field, message) {
  refusal = message ? { field, message } : null;
  showMessages();
}

/**
 * Wires every control inside `root` (the workshop's form, or Go further's once it is there): a
 * change is read by the core and drawn by `render` (which returns the sentences it said, or null
 * where the core refused the setup); a choice the setup refuses is held pending by `choices`
 * (choices.js) and shown so, a value that cannot be read is refused with its message by the
 * control.
 */
export function createControls({ estimator, store, render, choices, root }) {
  const { SWITCH, CHOICE } = estimator.settingKinds;
  const controls = placed(estimator, root);
  const slider = root.querySelector('#tokens-slider');
  const model = controls.find(({ setting }) => setting.id === estimator.modelSettingId);
  pendingChoices = choices.pending;

  // Each option carries its choice's source as its title: a device's datasheet, a recipe's paper.
  const option = (choice) => Object.assign(new Option(choice.name, choice.id), { title: choice.source });
  for (const { setting, element } of controls) {
    if (setting.kind === CHOICE && element.tagName === 'SELECT' && element !== model?.element) {
      element.replaceChildren(...setting.choices.map(option));
    }
  }
  if (slider) slider.max = String(MAX_MICRO_BATCH_SEQUENCES);
  const settingOf = (id) => estimator.settings.find((setting) => setting.id === id);
  const shown = (value) => (Number.isFinite(Number(value)) ? estimator.formatCount(Number(value)) : value);

  /**
   * What a change did to the setting it keeps (the tokens, when the sequence length changes): kept
   * as it was, or moved where it cannot be, with why. '' for a setting that keeps none.
   */
  function keptWords(kept, before, keeping) {
    if (!kept) return '';
    const { view } = store.get();
    const after = view.settingTexts[kept];
    const name = settingOf(kept).name;
    if (after !== before) return `${name} is now ${shown(after)}, not ${shown(before)}: ${keeping.message}`;
    return tokensInSequences(estimator, name, 'stays', view.estimate.setup);
  }

  /**
   * Reads `text` as setting `id` of the current setup; draws it, holds it pending where the rest
   * of the setup refuses it, or says why it cannot be read. A setting the changed one keeps (the
   * tokens, when the sequence length changes) keeps its value if it can, and the notice says what
   * became of it.
   */
  function change(id, text, how) {
    const { setup, view } = store.get();
    choices.touch(id);
    const read = (from, settingId, settingText) =>
      estimator.changeSetting(from, settingId, settingText, MAX_MICRO_BATCH_SEQUENCES);
    const result = read(setup, id, text);
    if (!result.ok) {
      showError(result.invalidField, result.message);
      return;
    }
    let next = result.setup;
    const kept = settingOf(id)?.keeps;
    const before = kept ? view.settingTexts[kept] : '';
    const keeping = kept ? read(next, kept, before) : null;
    if (keeping?.ok) next = keeping.setup;
    const said = render(next, how);
    if (said === null) {
      // Refused as the setup stands: held, shown as chosen, and applied once the rest allows it.
      choices.hold(id, text, { invalidField: refusal.field, message: refusal.message });
      showError('', '');
      sync(setup, view);
      return;
    }
    showNotice([keptWords(kept, before, keeping), ...said].filter(Boolean).join(' '));
  }

  // Typed values are committed on Enter or when the field loses focus.
  for (const { setting, element } of controls) {
    element.addEventListener('change', () =>
      change(setting.id, setting.kind === SWITCH ? (element.checked ? 'on' : 'off') : element.value.trim()),
    );
  }
  slider?.addEventListener('input', () => change(slider.dataset.setting, slider.value, { dragging: true }));
  // The end of a drag (or a key press) writes the URL at once.
  slider?.addEventListener('change', () => change(slider.dataset.setting, slider.value));

  let modelOptionsFor; // the custom model's name the menu was built for (null: none; unset: not yet)

  /**
   * Shows `setup` in every control, from the texts its view carries (no call per setting); a
   * control whose setting needs another is off meanwhile.
   */
  function sync(setup, view) {
    const { estimate } = view;
    const text = (id) => view.settingTexts[id];
    // What the reader chose: the view's setting, or the choice held pending in its place.
    const chosen = (id) => choices.pendingText(id) ?? text(id);
    const asking = new Set(choices.pending().flatMap(([id, entry]) => [id, entry.field]));
    if (refusal) asking.add(refusal.field);
    if (model) {
      // The presets, and a model read from a config.json under its own name: rebuilt when that
      // name changes, not on every redraw.
      const custom = setup.modelId === estimator.customModelId ? setup.customModel.name : null;
      if (custom !== modelOptionsFor) {
        // One group per family, in the core's order (the plate's Llama 3 sizes first).
        const groups = [];
        for (const preset of estimator.presets) {
          if (groups.at(-1)?.label !== preset.family) {
            const group = document.createElement('optgroup');
            group.label = preset.family;
            groups.push(group);
          }
          groups.at(-1).append(new Option(preset.name, preset.id));
        }
        if (custom !== null) groups.push(new Option(`${custom} (config.json)`, estimator.customModelId));
        model.element.replaceChildren(...groups);
        modelOptionsFor = custom;
      }
    }
    for (const { setting, element } of controls) {
      if (setting.kind === SWITCH) put(element, 'checked', chosen(setting.id) === 'on');
      else put(element, 'value', chosen(setting.id));
      // Off while the setting it needs is not chosen, unless a message asks the reader to change it.
      if (setting.requiresSetting) {
        const asked = asking.has(setting.id);
        const chosenValue = chosen(setting.requiresSetting);
        const allowed = setting.requiresValues.includes(chosenValue);
        put(element, 'disabled', !asked && !allowed);
      }
    }
    if (!slider) return;
    // The sequences a micro-batch moves by, the core's (DPO's pairs: 2).
    const step = String(view.microBatchStep ?? 1);
    put(slider, 'min', step);
    put(slider, 'step', step);
    put(slider, 'value', text(slider.dataset.setting));
    const tokens = `${estimator.formatCount(estimate.tokensPerMicroBatch)} tokens`;
    if (slider.getAttribute('aria-valuetext') !== tokens) slider.setAttribute('aria-valuetext', tokens);
    put(
      $('tokens-hint'),
      'textContent',
      `Whole sequences of ${estimator.formatCount(estimate.setup.sequenceLength)} tokens, ` +
        `${step} to ${MAX_MICRO_BATCH_SEQUENCES} of them${step === '1' ? '' : `, ${step} at a time`}.`,
    );
  }

  return { sync };
}
