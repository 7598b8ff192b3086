// Compare: a pinned estimate stands beside the current one in the left chart, each bar labelled by
// what its setup has that the other's has not, with the difference in words beside the chart. The
// pinned estimate lives in the store.
import { $ } from '../dom.js';

/** The most settings a bar's label names; the sentence names them all. */
const LABELLED = 3;
/** A label's line, in characters: two bars' labels side by side on a phone's chart. */
const LINE = 22;

/** `text` in lines of about LINE characters, broken between words. */
function wrapped(text) {
  const lines = [];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last].length + 1 + word.length <= LINE) lines[last] += ` ${word}`;
    else lines.push(word);
  }
  return lines;
}

export function createComparePanel({ estimator, store, choices }) {
  $('pin').addEventListener('click', () => store.set({ pinned: store.get().view.estimate }));
  $('unpin').addEventListener('click', () => store.set({ pinned: null }));

  /** What differs between the pinned setup and this one: the settings, or two configs' models. */
  function differences(pinned, estimate) {
    const found = choices.differences(pinned.setup, estimate.setup);
    if (found.length === 0 && pinned.modelName !== estimate.modelName) {
      found.push({ name: 'Model', was: pinned.modelName, now: estimate.modelName });
    }
    return found;
  }

  /** One bar's label, in lines: "Pinned" or "Now", then its side of each difference. */
  function label(title, found, side, modelName) {
    if (found.length === 0) return [title, ...wrapped(modelName)];
    const named = found
      .slice(0, LABELLED)
      .flatMap((difference) => wrapped(`${difference.name}: ${difference[side]}`));
    const more = found.length - LABELLED;
    return [title, ...named, ...(more > 0 ? [`and ${more} more`] : [])];
  }

  return {
    element: null, // always on view
    /** The two bars' labels while a configuration is pinned; null otherwise. */
    barLabels({ view, pinned }) {
      if (!pinned || !view.ok) return null;
      const found = differences(pinned, view.estimate);
      return [
        label('Pinned', found, 'was', pinned.modelName),
        label('Now', found, 'now', view.estimate.modelName),
      ];
    },
    update({ view, pinned }) {
      const compare = $('compare');
      compare.hidden = pinned === null;
      $('pin').hidden = pinned !== null;
      $('unpin').hidden = pinned === null;
      if (!pinned) {
        compare.textContent = '';
        return;
      }
      const found = differences(pinned, view.estimate);
      const changed = found.length
        ? `Changed since pinned: ${found.map(({ name, was, now }) => `${name}, ${was} → ${now}`).join('; ')}. `
        : 'Nothing has changed since it was pinned. ';
      compare.textContent = changed + estimator.compare(pinned, view.estimate);
    },
  };
}
