// "Show the arithmetic": each term's formula with this setup's numbers and its source, and under
// the llama-block model the tensors behind the activations term, one row each.
import { $, fillTable } from '../dom.js';
import { whenAnswered } from './later.js';

function fillTerms(terms) {
  $('arithmetic-list').replaceChildren(
    ...terms.flatMap((term) => {
      const dt = document.createElement('dt');
      dt.textContent = term.label;
      const dd = document.createElement('dd');
      const formula = document.createElement('code');
      formula.textContent = term.formula;
      const source = document.createElement('span');
      source.className = 'source';
      source.textContent = term.source;
      dd.append(formula, source);
      return [dt, dd];
    }),
  );
}

function fillSavedTensors(estimator, { inUse, caption, tensors, bytesPerToken }) {
  $('saved-tensors').hidden = !inUse;
  if (!inUse) return;
  const bytes = (value) => `${estimator.formatCount(value)} B`;
  fillTable(
    $('saved-tensors-table').tBodies[0],
    tensors.map((tensor) => {
      // The name, and under it what keeps the tensor: one column that fits a phone.
      const name = document.createElement('span');
      name.textContent = tensor.name;
      const keptFor = document.createElement('span');
      keptFor.className = 'source';
      keptFor.textContent = ` — kept for ${tensor.savedBy}`;
      const cell = document.createDocumentFragment();
      cell.append(name, keptFor);
      return [
        cell,
        tensor.dtype,
        tensor.split > 1 ? `${tensor.elements} / ${estimator.formatCount(tensor.split)}` : tensor.elements,
        bytes(tensor.bytesPerToken),
      ];
    }),
  );
  $('saved-tensors-total').textContent = bytes(bytesPerToken);
  $('saved-tensors-caption').textContent = caption;
}

export function createArithmeticPanel({ estimator }) {
  return {
    update: whenAnswered(
      $('arithmetic-status'),
      ({ setup }) => Promise.all([estimator.explain(setup), estimator.savedTensors(setup)]),
      ([terms, savedTensors]) => {
        fillTerms(terms);
        fillSavedTensors(estimator, savedTensors);
      },
    ),
  };
}
