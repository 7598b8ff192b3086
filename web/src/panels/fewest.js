// The fewest devices that fit: searched when asked; a row's "Use" sets the workshop. A change of
// settings clears an answer that no longer holds.
import { $, button, fillTable } from '../dom.js';

const FIT_LAYOUTS_SHOWN = 8;

export function createFewestPanel({ estimator, store, render, showError }) {
  let shownFor = null; // the setup the table answers
  function find() {
    const { setup } = store.get();
    const search = estimator.fewestDevices(setup, FIT_LAYOUTS_SHOWN);
    if (!search.ok) {
      showError(search.invalidField, search.message);
      return;
    }
    const table = $('fit-table');
    if (search.layouts.length === 0) {
      $('fit-summary').textContent = search.whyNotFewer;
      table.hidden = true;
      return;
    }
    const first = search.layouts[0];
    $('fit-summary').textContent =
      `${first.modelName} at ${estimator.formatCount(first.tokensPerMicroBatch)} tokens per micro-batch ` +
      `fits on ${estimator.formatCount(search.fewestDevices)} × ${first.device.name} at the fewest. ` +
      search.whyNotFewer;
    fillTable(
      table.tBodies[0],
      search.layouts.map((layout) => [
        estimator.formatLayout(layout),
        estimator.formatBytes(layout.bytes.totalBytes),
        estimator.formatBytes(layout.bytes.modelStatesBytes),
        estimator.formatBytes(layout.bytes.activationsBytes),
        button('Use', () => render(layout.setup), `Use ${estimator.formatLayout(layout)}`),
      ]),
    );
    table.hidden = false;
    shownFor = setup;
  }
  $('find-fit').addEventListener('click', find);

  return {
    element: null, // always on view
    update({ setup }) {
      if (shownFor === null || shownFor === setup) return;
      shownFor = null;
      $('fit-table').hidden = true;
      $('fit-summary').textContent = 'The settings changed: search again for this configuration.';
    },
  };
}
