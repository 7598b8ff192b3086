// Compare: a pinned estimate stands beside the current one in the left chart, with the difference
// in words. The pinned estimate lives in the store.
import { $ } from '../dom.js';

export function createComparePanel({ estimator, store }) {
  $('pin').addEventListener('click', () => store.set({ pinned: store.get().view.estimate }));
  $('unpin').addEventListener('click', () => store.set({ pinned: null }));
  return {
    element: null, // always on view
    update({ view, pinned }) {
      const compare = $('compare');
      compare.hidden = pinned === null;
      $('pin').hidden = pinned !== null;
      $('unpin').hidden = pinned === null;
      compare.textContent = pinned ? estimator.compare(pinned, view.estimate) : '';
    },
  };
}
