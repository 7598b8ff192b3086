// "The numbers behind the charts": the charts' figures as tables, for screen readers and copying.
import { TERMS } from '../terms.js';
import { fillTable } from '../dom.js';
import { formatPerParameter } from '../format.js';

export function createNumbersPanel({ estimator }) {
  const element = document.querySelector('.numbers');
  return {
    element,
    update({ view }) {
      const { estimate } = view;
      const shownTerms = TERMS.filter((term) => term.key !== 'logitsBytes' || estimate.setup.logits);
      fillTable(document.getElementById('breakdown-table').tBodies[0], [
        ...shownTerms.map((term) => [
          term.label,
          term.perParameterKey ? formatPerParameter(estimate.bytesPerParameter[term.perParameterKey]) : '—',
          estimator.formatBytes(estimate.bytes[term.key]),
        ]),
        [
          'Total',
          `${formatPerParameter(estimate.bytesPerParameter.total)} + activations`,
          estimator.formatBytes(estimate.bytes.totalBytes),
        ],
      ]);
      fillTable(
        document.getElementById('activations-table').tBodies[0],
        view.activationCurve.map((point) => [
          estimator.formatCount(point.tokens),
          estimator.formatBytes(point.flashAttentionBytes),
          estimator.formatBytes(point.withoutFlashAttentionBytes),
        ]),
      );
    },
  };
}
