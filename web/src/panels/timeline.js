// Memory over one training step, drawn on first opening (the first view does not need it).
import { $ } from '../dom.js';
import { whenAnswered } from './later.js';

export function createTimelinePanel({ estimator, createTimelineChart }) {
  let chart = null;
  return {
    element: $('timeline'),
    update: whenAnswered(
      $('timeline-status'),
      ({ setup }) => estimator.timeline(setup),
      ({ points, peakIndex }) => {
        chart ??= createTimelineChart($('timeline-chart'), {
          formatBytes: estimator.formatBytes,
          formatBytesShort: estimator.formatBytesShort,
        });
        const peak = points[peakIndex];
        const where = peak.layer > 0 ? `${peak.phase}, layer ${peak.layer}` : peak.phase;
        chart.update(points, peakIndex, `Peak ${estimator.formatBytes(peak.bytes)}`);
        $('timeline-summary').textContent =
          `Peak: ${estimator.formatBytes(peak.bytes)} at ${where}, the estimate's total; ` +
          `the model states alone hold ${estimator.formatBytes(points[0].bytes)} throughout.`;
      },
    ),
  };
}
