// "How close is this?": the measured cases never change, so the table is filled once, from the
// on-demand module, when the panel first opens.
import { $ } from '../dom.js';

const QUANTITY = {
  activations: 'Activations',
  logits: 'The loss',
  total: 'Whole device',
  reserved: 'Reserved by the allocator',
  allocated: 'Allocated by PyTorch',
};

function cell(tag, text) {
  const element = document.createElement(tag);
  element.textContent = text;
  return element;
}

/** The rows of one measured run, after a heading row when its source and statistic change. */
function runRows(run, group) {
  const rows = [];
  const heading = `${QUANTITY[run.quantity]}: ${run.statistic}.`;
  const details = `Source: ${run.citation}. ${run.note}.`;
  if (heading + details !== group) {
    const th = cell('th', heading);
    th.scope = 'colgroup';
    th.colSpan = 4;
    const source = cell('span', details);
    source.className = 'source';
    th.append(source);
    const tr = document.createElement('tr');
    tr.className = 'group';
    tr.append(th);
    rows.push(tr);
  }
  const tr = document.createElement('tr');
  const title = cell('th', run.title);
  title.scope = 'row';
  // Another tool's estimate of the run, published with the measurement, under the run's name.
  if (run.otherEstimateName) {
    const other = cell(
      'span',
      `${run.otherEstimateName}'s own estimate: ${run.otherEstimate} (${run.otherEstimateError})`,
    );
    other.className = 'other-estimate';
    title.append(other);
  }
  // The figure, then its error on a line of its own (one line apart when there is room).
  const estimate = (figure, error) => {
    const td = cell('td', run.ok ? figure : run.message);
    if (run.ok) {
      const percent = cell('span', ` (${error})`);
      percent.className = 'error-percent';
      td.append(percent);
    }
    return td;
  };
  tr.append(
    title,
    cell('td', run.measured),
    estimate(run.korthikanti, run.korthikantiError),
    estimate(run.llamaBlock, run.llamaBlockError),
  );
  rows.push(tr);
  return { rows, group: heading + details };
}

export function createMeasuredPanel({ estimator }) {
  let filled = false;
  return {
    async update() {
      if (filled) return;
      filled = true;
      let runs;
      try {
        runs = await estimator.measured();
      } catch (error) {
        filled = false; // let the next opening try again
        $('measured-status').textContent = `The measured cases could not load (${error.message}).`;
        return;
      }
      $('measured-status').textContent = '';
      let group = '';
      const rows = [];
      for (const run of runs) {
        const made = runRows(run, group);
        group = made.group;
        rows.push(...made.rows);
      }
      $('measured-table').tBodies[0].replaceChildren(...rows);
      // Where the estimate stands against another tool's, over the runs that published one.
      const standing = await estimator.measuredStanding();
      if (standing.length > 0) {
        const list = document.createElement('ul');
        list.append(...standing.map((sentence) => cell('li', sentence)));
        $('measured-standing').replaceChildren(
          cell(
            'p',
            "Against another tool's estimates of the same runs (whole errors, trainmem's under the Llama block):",
          ),
          list,
        );
      }
    },
  };
}
