// Memory over one training step, drawn on first opening (the first view does not need it).
import { $ } from '../dom.js';
import { MAX_MICRO_BATCH_SEQUENCES } from '../store.js';
import { whenAnswered } from './later.js';

/** The allocator's setting the step is also replayed the other way round under (the table's id). */
const EXPANDABLE = 'expandable-segments';

export function createTimelinePanel({ estimator, createTimelineChart }) {
  let chart = null;
  return {
    update: whenAnswered(
      $('timeline-status'),
      // Under a stack, the step twice: as set, and with expandable segments the other way round,
      // so that the allocator's setting shows what it changes (a refusal of the other: none); not
      // while a slider moves, which would replay the step twice a frame: once it rests.
      async ({ setup, view }, { dragging = false }) => {
        const asSet = await estimator.timeline(setup);
        if (view.estimate.stackTerms.length === 0 || dragging) return { asSet, toggled: null };
        const other = estimator.changeSetting(
          setup,
          EXPANDABLE,
          estimator.settingText(setup, EXPANDABLE) === 'on' ? 'off' : 'on',
          MAX_MICRO_BATCH_SEQUENCES,
        );
        const toggled = other.ok ? await estimator.timeline(other.setup).catch(() => null) : null;
        return { asSet, toggled: toggled?.points?.length ? toggled : null };
      },
      ({ asSet: { points, peakIndex }, toggled }, { setup, view }) => {
        if (!chart) {
          chart = createTimelineChart($('timeline-chart'), {
            formatBytes: estimator.formatBytes,
            formatBytesShort: estimator.formatBytesShort,
            terms: estimator.terms,
          });
          globalThis.trainmemPage.timeline = chart; // the browser tests read what it names
        }
        const peak = points[peakIndex];
        const where = peak.layer > 0 ? `${peak.phase}, layer ${peak.layer}` : peak.phase;
        const otherWay =
          estimator.settingText(setup, EXPANDABLE) === 'on'
            ? 'without expandable segments'
            : 'with expandable segments';
        chart.update(
          points,
          peakIndex,
          `Peak ${estimator.formatBytes(peak.bytes)}`,
          toggled?.points ?? [],
          `Reserved ${otherWay}`,
        );
        // The most reserved: by the step's end, or, where vLLM sleeps, as it generates.
        const reservedAtMost = (list) => Math.max(...list.map((point) => point.reservedBytes));
        const reserved = reservedAtMost(points);
        const toggledReserved = toggled ? reservedAtMost(toggled.points) : undefined;
        // A stack's replayed step names its own terms; the idealised step, none.
        $('timeline-summary').textContent =
          view.estimate.stackTerms.length === 0
            ? `Peak: ${estimator.formatBytes(peak.bytes)} at ${where}, the estimate's total; ` +
              `the model states alone hold ${estimator.formatBytes(points[0].bytes)} throughout.`
            : `Allocated peak: ${estimator.formatBytes(peak.bytes)} at ${where}, with the runtime ` +
              `outside the allocator. The most the caching allocator reserves in the step, ` +
              `${estimator.formatBytes(reserved)}, is the estimate's total.` +
              (toggledReserved === undefined
                ? ''
                : ` ${otherWay.charAt(0).toUpperCase()}${otherWay.slice(1)} it would reserve ` +
                  `${estimator.formatBytes(toggledReserved)} (the dotted line).`);
      },
    ),
  };
}
