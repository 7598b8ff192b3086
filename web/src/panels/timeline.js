// Memory over one training step, drawn on first opening (the first view does not need it).
import { $ } from '../dom.js';
import { whenAnswered } from './later.js';

export function createTimelinePanel({ estimator, createTimelineChart }) {
  let chart = null;
  return {
    update: whenAnswered(
      $('timeline-status'),
      ({ setup }) => estimator.timeline(setup),
      ({ points, peakIndex }, { view }) => {
        chart ??= createTimelineChart($('timeline-chart'), {
          formatBytes: estimator.formatBytes,
          formatBytesShort: estimator.formatBytesShort,
          terms: estimator.terms,
        });
        const peak = points[peakIndex];
        const where = peak.layer > 0 ? `${peak.phase}, layer ${peak.layer}` : peak.phase;
        chart.update(points, peakIndex, `Peak ${estimator.formatBytes(peak.bytes)}`);
        // A stack's replayed step names its own terms; the idealised step, none.
        $('timeline-summary').textContent =
          view.estimate.stackTerms.length === 0
            ? `Peak: ${estimator.formatBytes(peak.bytes)} at ${where}, the estimate's total; ` +
              `the model states alone hold ${estimator.formatBytes(points[0].bytes)} throughout.`
            : `Allocated peak: ${estimator.formatBytes(peak.bytes)} at ${where}, with the runtime ` +
              `outside the allocator. What the caching allocator has reserved by the end of the step, ` +
              `${estimator.formatBytes(points.at(-1).reservedBytes)}, is the estimate's total.`;
      },
    ),
  };
}
