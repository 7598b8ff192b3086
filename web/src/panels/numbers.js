// "The numbers behind the charts": the charts' figures as tables, for screen readers and copying.
// The rows are the core's table of terms, as it lists them.
import { fillTable } from '../dom.js';
import { formatPerParameter } from '../format.js';
import { listed } from '../terms.js';

/** A term's bytes per parameter, for the model states; under LoRA the base's and the adapters' apart. */
function perParameter(estimate, term) {
  if (term.part !== 'modelState') return '—';
  const adapters = formatPerParameter(estimate.bytesPerParameter[term.id]);
  if (!(estimate.setup.loraRank > 0)) return adapters;
  // The weights hold the frozen base too, at its own bytes per parameter.
  if (term.id === 'weights') {
    return `${formatPerParameter(estimate.baseLinearBytesPerParameter)} frozen linear, ${adapters} adapters`;
  }
  return `${adapters} per adapter parameter`;
}

export function createNumbersPanel({ estimator }) {
  const element = document.querySelector('.numbers');
  const deviceTerms = estimator.terms.filter((term) => term.onDevice);
  return {
    element,
    update({ view }) {
      const { estimate } = view;
      const shownTerms = deviceTerms.filter((term) =>
        listed(term, estimate.bytes[term.apiKey], view.settingTexts, estimate.stage.role),
      );
      fillTable(document.getElementById('breakdown-table').tBodies[0], [
        ...shownTerms.map((term) => [
          term.label,
          perParameter(estimate, term),
          estimator.formatBytes(estimate.bytes[term.apiKey]),
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
          point.withoutFlashAttentionCounted
            ? estimator.formatBytes(point.withoutFlashAttentionBytes)
            : 'not counted',
        ]),
      );
    },
  };
}
