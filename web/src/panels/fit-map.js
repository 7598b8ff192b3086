// Where it fits: a cell per sequence length and micro-batch, the share of one device; a cell sets
// the workshop.
import { $, button, fillTable } from '../dom.js';
import { plural } from '../format.js';
import { whenAnswered } from './later.js';

function headRow(microBatchSequences) {
  const head = document.createElement('tr');
  for (const text of ['tokens \\ sequences', ...microBatchSequences.map(String)]) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = text;
    head.append(th);
  }
  return head;
}

export function createFitMapPanel({ estimator, render }) {
  function cellButton(cell, setup) {
    const share = estimator.formatShare(cell.devicesWorth);
    const text = cell.fits ? share : `✗ ${share}`;
    // The accessible name starts with the visible text, then says what the cell means.
    const label =
      `${text}: ${estimator.formatCount(cell.sequenceLength)} tokens, ` +
      `${plural(cell.microBatchSequences, 'sequence')}, ${estimator.formatBytes(cell.totalBytes)}, ` +
      `${cell.fits ? 'fits' : 'does not fit'}`;
    const element = button(
      text,
      () =>
        render(
          { ...setup, sequenceLength: cell.sequenceLength, microBatchSequences: cell.microBatchSequences },
          { reveal: true },
        ),
      label,
    );
    element.className = cell.fits ? 'fits' : 'over';
    const current =
      cell.sequenceLength === setup.sequenceLength && cell.microBatchSequences === setup.microBatchSequences;
    element.setAttribute('aria-current', current ? 'true' : 'false');
    return element;
  }

  return {
    update: whenAnswered(
      $('where-it-fits-status'),
      ({ setup }) => estimator.fitMap(setup),
      (map, { setup }) => {
        const table = $('fit-map');
        table.hidden = false; // empty until the first answer
        table.tHead.replaceChildren(headRow(map.microBatchSequences));
        const columns = map.microBatchSequences.length;
        fillTable(
          table.tBodies[0],
          map.sequenceLengths.map((sequenceLength, row) => [
            estimator.formatCount(sequenceLength),
            ...map.cells
              .slice(row * columns, (row + 1) * columns)
              .map((cell) => (cell.valid ? cellButton(cell, setup) : '—')),
          ]),
        );
      },
    ),
  };
}
