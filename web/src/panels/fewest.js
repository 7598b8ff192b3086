// The fewest devices that fit: searched when asked; a row's "Use" sets the workshop. When the
// settings the search kept (model, tokens, recipe, device: all but the layout it chose) change,
// the table stays, marked with the settings it was found for, until the next search.
import { $, button, fillTable } from '../dom.js';

const FIT_LAYOUTS_SHOWN = 8;

/**
 * Gives each figure and reason its column's name (data-label): in a narrow box each layout is a
 * card, its cells stacked, and the stylesheet shows the name beside each one.
 */
function labelCells(table) {
  const names = [...table.tHead.rows[0].cells].map((cell) => cell.textContent.trim());
  for (const row of table.tBodies[0].rows) {
    for (const cell of row.querySelectorAll('td:not(:last-child)')) {
      cell.dataset.label = names[cell.cellIndex];
    }
  }
}

export function createFewestPanel({ estimator, store, render, showError }) {
  let searched = null; // {setup, summary}: what the table answers
  const kept = estimator.settings.filter((setting) => !setting.chosenByFit);
  const sameSearch = (left, right) =>
    left.customModel?.name === right.customModel?.name &&
    kept.every(
      (setting) => estimator.settingText(left, setting.id) === estimator.settingText(right, setting.id),
    );

  // The search runs in the on-demand module (trainmem-full.js), loaded on the first click.
  async function find() {
    const { setup } = store.get();
    let search;
    $('fit-summary').textContent = 'Searching…';
    try {
      search = await estimator.fewestDevices(setup, FIT_LAYOUTS_SHOWN);
    } catch (error) {
      $('fit-summary').textContent = `The search could not load (${error.message}). Try again.`;
      return;
    }
    if (!search.ok) {
      showError(search.invalidField, search.message);
      return;
    }
    const table = $('fit-table');
    $('fit-stale').hidden = true;
    if (search.layouts.length === 0) {
      $('fit-summary').textContent = search.whyNotFewer;
      table.hidden = true;
      searched = null;
      return;
    }
    const first = search.layouts[0];
    const summary =
      `${first.modelName} at ${estimator.formatCount(first.tokensPerMicroBatch)} tokens per micro-batch ` +
      `on ${first.device.name}`;
    $('fit-summary').textContent =
      `${first.modelName} at ${estimator.formatCount(first.tokensPerMicroBatch)} tokens per micro-batch ` +
      `fits on ${estimator.formatCount(search.fewestDevices)} × ${first.device.name} at the fewest. ` +
      search.whyNotFewer;
    fillTable(
      table.tBodies[0],
      search.layouts.map((layout, index) => [
        estimator.formatLayout(layout),
        // A stack's term that outweighs the states and activations, named beside the total.
        search.outweighing?.[index]
          ? `${estimator.formatBytes(layout.bytes.totalBytes)}, of it ${search.outweighing[index].label} ` +
            estimator.formatBytes(search.outweighing[index].bytes)
          : estimator.formatBytes(layout.bytes.totalBytes),
        estimator.formatBytes(layout.bytes.modelStatesBytes),
        estimator.formatBytes(layout.bytes.activationsBytes),
        `${estimator.formatCount(search.costs[index].score)}: ${search.costs[index].reason}`,
        button('Use', () => render(layout.setup, { reveal: true }), `Use ${estimator.formatLayout(layout)}`),
      ]),
    );
    labelCells(table);
    table.hidden = false;
    searched = { setup, summary };
  }
  return {
    find,
    update({ setup }) {
      if (searched === null) return;
      const stale = !sameSearch(searched.setup, setup);
      $('fit-stale').hidden = !stale;
      $('fit-stale').textContent = stale
        ? `These layouts were found for ${searched.summary}, and the settings have changed since: search again for the current ones.`
        : '';
    },
  };
}
