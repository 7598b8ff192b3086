// The reader's choices, kept: a choice the core refuses in the setup of the moment (the torchtitan
// stack on one device) is held pending, shown on its control, and applied by itself, in words, once
// the rest of the setup lets it; and a setting the reader never touched changes only with a
// sentence saying so. Nothing here reads a choice's meaning: the core says what is allowed
// (workshopView), and what a run computes (withLogitsAsRun).
import { byWhom, tokensInSequences } from './format.js';
import { MAX_MICRO_BATCH_SEQUENCES } from './store.js';

/** The logits' switch: a setting the page may turn on by itself, and says so. */
const LOGITS_SETTING = 'logits';
/** The sequence length: brought within a model's learned positions, if the reader never set it. */
const SEQUENCE_SETTING = 'seq-len';

export function createChoices(estimator) {
  const settingOf = (id) => estimator.settings.find((setting) => setting.id === id);
  /** Pending choices by setting id, in the order chosen: {text, field, message}. */
  const pending = new Map();
  /** The settings the reader has set: a link sets them all (it restores what its sender saw). */
  const touched = new Set();
  const viewOf = (setup) => estimator.workshopView(setup, MAX_MICRO_BATCH_SEQUENCES);
  const read = (setup, id, text) => estimator.changeSetting(setup, id, text, MAX_MICRO_BATCH_SEQUENCES);

  /** A setting's text as its control shows it: a choice by its name, a number as it is. */
  const shown = (setting, text) => setting.choices?.find((choice) => choice.id === text)?.name ?? text;

  /** "Stack: torchtitan" — the setting's name and the choice's, as the controls show them. */
  function named(id, text) {
    const setting = settingOf(id);
    return `${setting.name}: ${shown(setting, text)}`;
  }

  /** The settings that differ between two setups, in the table's order: {name, was, now}, as shown. */
  function differences(before, after) {
    return estimator.settings.flatMap((setting) => {
      const was = estimator.settingText(before, setting.id);
      const now = estimator.settingText(after, setting.id);
      return was === now ? [] : [{ name: setting.name, was: shown(setting, was), now: shown(setting, now) }];
    });
  }

  /** The reader's practitioner's setups: a training stack, fine-tuning, or their own config. */
  function practitioners(setup) {
    const plate = estimator.defaultSetup;
    return setup.stack !== plate.stack || setup.loraRank > 0 || setup.modelId === estimator.customModelId;
  }

  /**
   * Once the reader leaves the plate's view for a practitioner's setup, the logits and the loss
   * count, as that run computes them, unless the reader has set the switch: said in `said`.
   */
  function countLogits(before, setup, view, said) {
    if (touched.has(LOGITS_SETTING) || setup.logits || !view.logitsLeftOut?.bytes) return { setup, view };
    if (before && practitioners(before)) return { setup, view };
    if (!practitioners(setup)) return { setup, view };
    const counted = estimator.withLogitsAsRun(setup);
    const countedView = viewOf(counted);
    if (!countedView.ok) return { setup, view };
    const loss = settingOf('loss').choices.find((choice) => choice.id === countedView.settingTexts.loss);
    // The change in the total the readout shows, said as it goes: under a stack the step's peak
    // can move to another moment with them, and the total fall.
    const total = countedView.estimate.bytes.totalBytes;
    const change = estimator.formatChange(view.estimate.bytes.totalBytes, total);
    said.push(
      `The logits and the loss now count, as this run computes them (${loss.name}): the total is ` +
        `${estimator.formatBytes(total)}, ${change}${change.endsWith('less') ? ', as the step peaks elsewhere' : ''}. ` +
        'Untick the logits to leave them out, as the plate does.',
    );
    return { setup: counted, view: countedView };
  }

  /**
   * A model with learned positions (GPT-2's 1,024) refuses a longer sequence. If the reader never
   * set the sequence length, it comes within them, said in `said`; otherwise the refusal stands.
   */
  function withinPositions(setup, refusal, said) {
    if (refusal.invalidField !== SEQUENCE_SETTING || touched.has(SEQUENCE_SETTING)) return null;
    const shape =
      setup.modelId === estimator.customModelId
        ? setup.customModel
        : estimator.presets.find((preset) => preset.id === setup.modelId);
    if (!(shape?.numPositionEmbeddings > 0 && shape.maxPositions > 0)) return null;
    const positions = estimator.formatCount(shape.maxPositions);
    let change = read(setup, SEQUENCE_SETTING, String(shape.maxPositions));
    if (!change.ok) return null;
    // The tokens per micro-batch stay, as when the reader sets the sequence length, if they can.
    const kept = settingOf(SEQUENCE_SETTING).keeps;
    const tokens = setup.sequenceLength * setup.microBatchSequences;
    const keeping = kept ? read(change.setup, kept, String(tokens)) : null;
    if (keeping?.ok) change = keeping;
    const view = viewOf(change.setup);
    if (!view.ok) return null;
    said.push(
      `Sequence length is now ${positions} tokens: ${shape.name} has ${positions} learned positions. ` +
        tokensInSequences(
          estimator,
          settingOf(kept).name,
          keeping?.ok ? 'stays' : 'is now',
          view.estimate.setup,
        ) +
        ' Set the sequence length to choose another.',
    );
    return { setup: change.setup, view };
  }

  return {
    /**
     * The view to draw for `next` (the reader's change on `before`): refused as it stands, or
     * accepted with every pending choice that it now lets in, and the logits counted where the
     * reader has left the plate's view. {view, setup, said: [sentences]}.
     */
    settle(before, next) {
      // The stack's own loss and precision, where the reader has chosen neither: said.
      const stacked = estimator.bringStackDefaults(next, [...touched]);
      const fitted = [];
      if (stacked.brought.length > 0) {
        next = stacked.setup;
        // One sentence for each who brought settings (the stack, verl), in the core's order.
        const said = byWhom(stacked.brought)
          .map(
            ([by, brought]) =>
              `${by} brings: ${brought.map(({ settingId, text }) => named(settingId, text)).join('; ')}.`,
          )
          .join(' ');
        fitted.push(`${said} Set them to choose otherwise.`);
      }
      let view = viewOf(next);
      let setup = next;
      if (!view.ok) {
        const within = withinPositions(next, view, fitted);
        if (!within) return { view, setup: next, said: [] };
        ({ setup, view } = within);
      }
      const applied = [];
      // A pending choice may wait on another: try them all again until none more goes in.
      for (let progress = pending.size > 0; progress;) {
        progress = false;
        for (const [id, entry] of pending) {
          const change = read(setup, id, entry.text);
          const tried = change.ok ? viewOf(change.setup) : change;
          if (!tried.ok) {
            Object.assign(entry, { field: tried.invalidField, message: tried.message });
            continue;
          }
          ({ setup } = change);
          view = tried;
          applied.push(named(id, entry.text));
          pending.delete(id);
          progress = true;
        }
      }
      const said = applied.length
        ? [
            ...fitted,
            `Applied your earlier choice${applied.length > 1 ? 's' : ''}, which the setup now allows: ${applied.join('; ')}.`,
          ]
        : fitted;
      return { ...countLogits(before, setup, view, said), said };
    },
    /** Holds the reader's `text` for setting `id`, which the core refused for `refusal`. */
    hold(id, text, refusal) {
      pending.set(id, { text, field: refusal.invalidField, message: refusal.message });
    },
    named,
    differences,
    /** The reader set `id` again: whatever it held pending goes. */
    touch(id) {
      touched.add(id);
      pending.delete(id);
    },
    /** A link opened: it set every setting as its sender saw it. */
    touchAll() {
      for (const setting of estimator.settings) touched.add(setting.id);
    },
    /** Back to the plate's view: nothing pending, and nothing set by the reader under Go further. */
    forget(ids) {
      for (const id of ids) {
        touched.delete(id);
        pending.delete(id);
      }
    },
    /** The pending choices: [[id, {text, field, message}]], in the order chosen. */
    pending: () => [...pending],
    pendingText: (id) => pending.get(id)?.text,
  };
}
