// "The numbers behind the charts": the charts' figures as tables, for screen readers and copying.
import { TERMS } from '../terms.js';
import { fillTable } from '../dom.js';
import { formatPerParameter } from '../format.js';

/** A term's bytes per parameter; under LoRA the base's and the adapters' apart. */
function perParameter(estimate, term) {
  if (!term.perParameterKey) return '—';
  const adapters = formatPerParameter(estimate.bytesPerParameter[term.perParameterKey]);
  if (!(estimate.setup.loraRank > 0)) return adapters;
  if (term.key === 'weightsBytes') {
    return `${formatPerParameter(estimate.baseLinearBytesPerParameter)} frozen linear, ${adapters} adapters`;
  }
  return `${adapters} per adapter parameter`;
}

export function createNumbersPanel({ estimator }) {
  const element = document.querySelector('.numbers');
  return {
    element,
    update({ view }) {
      const { estimate } = view;
      const shownTerms = TERMS.filter(
        (term) =>
          (term.key !== 'logitsBytes' || estimate.setup.logits) &&
          (term.key !== 'dequantizationBytes' || estimate.bytes.dequantizationBytes > 0) &&
          (term.key !== 'fp8WeightsBytes' || estimate.setup.precision === 'fp8-mixed'),
      );
      fillTable(document.getElementById('breakdown-table').tBodies[0], [
        ...shownTerms.map((term) => [
          term.label,
          perParameter(estimate, term),
          estimator.formatBytes(estimate.bytes[term.key]),
        ]),
        [
          'Total',
          estimate.setup.loraRank > 0
            ? 'frozen base + adapters + activations'
            : `${formatPerParameter(estimate.bytesPerParameter.total)} + activations`,
          estimator.formatBytes(estimate.bytes.totalBytes),
        ],
        ...(estimate.host.totalBytes > 0
          ? [
              [
                'Host memory (offloaded, and its FP32 gradients)',
                '—',
                estimator.formatBytes(estimate.host.totalBytes),
              ],
            ]
          : []),
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
