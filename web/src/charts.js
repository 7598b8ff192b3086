// The plate's two charts and the timeline's. Each is created once. A redraw gives the bar chart a
// dataset per term it draws (each term's own, kept from draw to draw) and updates it; the
// activation chart is updated where its curves or axes change and only rendered again where its
// ring alone moves. Only the Chart.js parts used here are registered.
import {
  BarController,
  BarElement,
  Chart,
  CategoryScale,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  LogarithmicScale,
  PointElement,
  Tooltip,
} from 'chart.js';
import { marks, paperBackground, ringMark, termFill, theme } from './chart-parts.js';
import { formatPerParameter } from './format.js';
import { deviceTerms, styled } from './terms.js';

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  LogarithmicScale,
  PointElement,
  Tooltip,
);

const FLASH_COLOR = '#3d8b57';
const NO_FLASH_COLOR = '#b8433a';

const SERIES = { flash: 0, noFlash: 1, room: 2 };
const CHOICE_RING_RADIUS = 7;
const PEAK_RING_RADIUS = 6;

/** Where to click each of a chart's legend entries, in CSS pixels, by its words. */
const legendCentres = (chart) =>
  Object.fromEntries(
    chart.legend.legendItems.map((item, index) => {
      const box = chart.legend.legendHitBoxes[index];
      return [item.text, { x: box.left + box.width / 2, y: box.top + box.height / 2 }];
    }),
  );

/**
 * The workshop's two charts, drawn from chartData() (chart-data.js). Tick labels and tooltips are
 * worded by `formatters` ({formatBytes, formatBytesShort, formatCount}); setFormatters replaces
 * them (the build's first view words only its own ticks, the core every value).
 */
export function createCharts({ breakdownCanvas, activationsCanvas, formatters, initial = null }) {
  let format = formatters;
  let data = null;
  let breakdown = null;
  let activations = null;
  let shownIds = null; // the terms the bar chart has datasets for, as "id,id,…"
  const barSets = new Map(); // each term's dataset, by id, made when first drawn
  let curvesDrawn = null; // what the right chart last updated for, bar its ring (curvesKey)
  const legendText = (index) => {
    const term = data.terms[index];
    const bytes = data.perParameter[term.id];
    return bytes === undefined ? term.label : `${term.label} (${formatPerParameter(bytes)} B/param)`;
  };
  /** "Label: value", or the label alone where no value can be worded yet. */
  const tooltipLabel = (label, bytes) => {
    const value = format.formatBytes(bytes);
    return value ? `${label}: ${value}` : label;
  };
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  const colors = theme();
  // The ring marks the chosen micro-batch on its own curve, and hides with it.
  const choiceRing = ringMark(colors, CHOICE_RING_RADIUS);
  Chart.defaults.color = colors.inkSoft;
  Chart.defaults.borderColor = colors.grid;
  Chart.defaults.plugins.paperBackground = { color: colors.card };
  const byteTicks = { callback: (value) => format.formatBytesShort(value) };
  // The axes' ticks are chart-data.js's, exactly: the same with and without the core.
  const ticksFrom = (key) => (axis) => {
    axis.ticks = (data?.[key] ?? []).map((value) => ({ value }));
  };
  const common = {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    interaction: { mode: 'nearest', intersect: false },
  };

  /** One term's bars. */
  const barDataset = (term) => ({
    label: term.label,
    data: [0],
    backgroundColor: termFill(styled(term)),
    borderColor: colors.card,
    borderWidth: 1,
    maxBarThickness: 140,
  });
  const breakdownConfig = {
    type: 'bar',
    plugins: [paperBackground, marks],
    // A dataset per term chartData() draws: each term's own (barSets), set in place by apply().
    data: { labels: [''], datasets: [] },
    options: {
      ...common,
      interaction: { mode: 'point', intersect: true },
      scales: {
        // A label in lines, level: two bars' labels side by side never cross.
        x: { stacked: true, grid: { display: false }, ticks: { maxRotation: 0, autoSkip: false } },
        y: {
          stacked: true,
          min: 0,
          afterBuildTicks: ticksFrom('breakdownTicks'),
          ticks: byteTicks,
          title: { display: true, text: 'Memory' },
        },
      },
      plugins: {
        legend: {
          position: 'bottom',
          labels: {
            boxWidth: 14,
            padding: 10,
            // The terms chartData() draws; state terms say their bytes per parameter.
            generateLabels: (chart) =>
              Chart.defaults.plugins.legend.labels.generateLabels(chart).map((item) => ({
                ...item,
                text: legendText(item.datasetIndex),
              })),
          },
        },
        tooltip: {
          callbacks: { label: (item) => tooltipLabel(item.dataset.label, item.parsed.y) },
        },
        marks: { colors, lines: [] },
      },
    },
  };

  const activationsConfig = {
    type: 'line',
    plugins: [paperBackground, choiceRing.plugin],
    data: {
      datasets: [
        {
          label: 'With FlashAttention',
          data: [],
          borderColor: FLASH_COLOR,
          backgroundColor: FLASH_COLOR,
          pointRadius: 2,
          borderWidth: 2,
        },
        {
          label: 'Without FlashAttention',
          data: [],
          borderColor: NO_FLASH_COLOR,
          backgroundColor: NO_FLASH_COLOR,
          pointRadius: 2,
          borderWidth: 2,
          borderDash: [2, 3],
        },
        {
          // Named in the legend, so that its words never lie across the curves.
          label: 'Room for activations',
          data: [],
          borderColor: colors.ink,
          backgroundColor: colors.card,
          borderWidth: 1.5,
          borderDash: [6, 4],
          pointRadius: 0,
          pointHoverRadius: 0,
        },
      ],
    },
    options: {
      ...common,
      // Room for the ring at the curves' right end, past the plot.
      layout: { padding: { right: choiceRing.overflow } },
      scales: {
        x: {
          type: 'linear',
          afterBuildTicks: ticksFrom('tokenTicks'),
          ticks: { callback: (value) => format.formatCount(value), maxRotation: 0, autoSkipPadding: 12 },
          title: { display: true, text: 'Tokens per micro-batch' },
        },
        // Logarithmic, so that the FlashAttention curve keeps its height beside the other, ten or
        // more times higher, at any model and any length.
        y: {
          type: 'logarithmic',
          afterBuildTicks: ticksFrom('activationTicks'),
          ticks: byteTicks,
          title: { display: true, text: 'Activations (log scale)' },
        },
      },
      plugins: {
        legend: {
          position: 'top',
          labels: {
            boxWidth: 14,
            padding: 10,
            filter: (item, chartData) => chartData.datasets[item.datasetIndex].data.length > 0,
          },
        },
        tooltip: {
          callbacks: {
            title: (items) => (items.length ? `${format.formatCount(items[0].parsed.x)} tokens` : ''),
            label: (item) => tooltipLabel(item.dataset.label, item.parsed.y),
          },
        },
      },
    },
  };

  /** All the right chart draws but its ring, as a key: while it holds, a redraw moves the ring. */
  const curvesKey = (next) =>
    JSON.stringify([
      next.curve,
      next.deviceName,
      next.tokenTicks,
      next.activationRange,
      next.activationTicks,
    ]);

  /** Puts chartData() `next` into both charts' data and options. */
  function apply(next) {
    data = next;
    const barLabel = (bar) =>
      bar.numDevices === 1
        ? bar.modelName
        : bar.stageAsked > 0
          ? `${bar.modelName}: pipeline stage ${bar.stageAsked}'s device`
          : `${bar.modelName}: most loaded of ${format.formatCount(bar.numDevices)} devices`;
    breakdownConfig.data.labels = data.bars.map((bar) => bar.label ?? barLabel(bar));
    const datasets = breakdownConfig.data.datasets;
    const ids = data.terms.map((term) => term.id).join();
    if (ids !== shownIds) {
      // Chart.js forgets what a legend click hid with a dataset it no longer draws: the dataset
      // keeps it, so that a term the reader hid stays hidden as other terms come and go.
      datasets.forEach((set, index) => {
        set.hidden = !breakdown.isDatasetVisible(index);
      });
      for (const term of data.terms) if (!barSets.has(term.id)) barSets.set(term.id, barDataset(term));
      datasets.splice(0, datasets.length, ...data.terms.map((term) => barSets.get(term.id)));
      shownIds = ids;
    }
    data.terms.forEach((term, index) => {
      datasets[index].data = data.bars.map((bar) => bar.bytes[index]);
    });
    breakdownConfig.options.scales.y.max = data.breakdownTicks.at(-1);
    breakdownConfig.options.plugins.marks.lines = [
      {
        y: data.capacityBytes,
        label: `One ${data.deviceName}${data.capacityReported ? ' as PyTorch reports it' : ''}`,
      },
    ];

    const { curve } = data;
    const sets = activationsConfig.data.datasets;
    sets[SERIES.flash].data = curve.map((point) => ({ x: point.tokens, y: point.flash }));
    // None where the setup is not counted without FlashAttention: the legend then leaves it out.
    sets[SERIES.noFlash].data = curve
      .filter((point) => point.noFlash !== null)
      .map((point) => ({ x: point.tokens, y: point.noFlash }));
    sets[SERIES.room].data = curve
      .filter((point) => point.room)
      .map((point) => ({ x: point.tokens, y: point.room }));
    sets[SERIES.room].label = `Room for activations on one ${data.deviceName}`;
    const { x, y } = activationsConfig.options.scales;
    x.min = curve[0].tokens;
    x.max = curve.at(-1).tokens;
    y.min = data.activationRange.low;
    y.max = data.activationRange.high;
    choiceRing.set({
      x: data.choice.tokens,
      y: data.choice.bytes,
      dataset: data.choice.flashAttention ? SERIES.flash : SERIES.noFlash,
    });
  }

  /**
   * Draws chartData() `next` in both charts. Where the right chart's curves, line and axes are as
   * they were (a drag of the micro-batch moves only its ring), it is drawn again without an update,
   * which costs Chart.js a third of the time.
   */
  function draw(next) {
    apply(next);
    breakdown.update('none');
    const key = curvesKey(next);
    if (key === curvesDrawn) {
      activations.render();
    } else {
      activations.update('none');
      curvesDrawn = key;
    }
  }

  // Built with the first view's data already in place, each chart renders once, not twice.
  if (initial) apply(initial);
  breakdown = new Chart(breakdownCanvas, breakdownConfig);
  activations = new Chart(activationsCanvas, activationsConfig);
  if (initial) curvesDrawn = curvesKey(initial);

  return {
    draw,
    /** Words the axes and tooltips with `next` from the next draw on. */
    setFormatters(next) {
      format = next;
      curvesDrawn = null; // the ticks' words are made in an update
    },
    /** A chart as a PNG data URL: "breakdown" or "activations". */
    toPng: (which) => (which === 'breakdown' ? breakdown : activations).toBase64Image('image/png'),
    /**
     * Where the right chart draws what, in CSS pixels: its canvas, its plot area, the curves'
     * points, the ring and the legend's words and places (the browser tests read it).
     */
    activationsGeometry() {
      const points = (series) =>
        activations.getDatasetMeta(series).data.map((point) => ({ x: point.x, y: point.y }));
      const ring = choiceRing.place(activations);
      const { top, bottom, left, right } = activations.chartArea;
      return {
        width: activations.width,
        height: activations.height,
        plot: { top, bottom, left, right },
        flash: points(SERIES.flash),
        noFlash: points(SERIES.noFlash),
        ring,
        legend: activations.legend.legendItems.map((item) => item.text),
        legendCentres: legendCentres(activations),
      };
    },
    /** The bar chart's labels, each in lines, and each bar's centre in CSS pixels (the browser tests read it). */
    breakdownLabels: () => ({
      labels: breakdown.data.labels.map((label) => [label].flat()),
      centres: breakdown.data.labels.map((label, index) => breakdown.scales.x.getPixelForTick(index)),
      width: breakdown.width,
    }),
    /** The bar chart's legend: each entry's words and whether its term is hidden, and where to click. */
    breakdownLegend: () => ({
      items: breakdown.legend.legendItems.map(({ text, hidden }) => ({ text, hidden })),
      centres: legendCentres(breakdown),
    }),
  };
}

/** The room a step chart's moment takes under its axis, in CSS pixels. */
const TIMELINE_TICK_PX = 90;

/**
 * The step's timeline: memory on the most loaded device, point by point, by term (the core's
 * table, `terms`), with its peak marked.
 */
export function createTimelineChart(canvas, { formatBytes, formatBytesShort, terms }) {
  const colors = theme();
  // Each term the device holds, stacked from the bottom in the table's order, drawn as its bar is.
  const parts = deviceTerms(terms);
  const reserved = parts.length;
  const peakRing = ringMark(colors, PEAK_RING_RADIUS);
  let peakAt = 0; // the peak's moment
  const chart = new Chart(canvas, {
    type: 'bar',
    plugins: [paperBackground, peakRing.plugin, marks],
    data: {
      labels: [],
      datasets: [
        // Each part a bar per moment, bars touching: a stacked area without Chart.js's Filler.
        ...parts.map((part) => ({
          type: 'bar',
          label: part.label,
          data: [],
          backgroundColor: termFill(part),
          stack: 'held',
          barPercentage: 1,
          categoryPercentage: 1,
        })),
        // Under a training stack: what the caching allocator has reserved by each moment.
        {
          type: 'line',
          label: 'Reserved by the allocator',
          data: [],
          borderColor: colors.inkSoft,
          backgroundColor: colors.inkSoft,
          borderDash: [6, 4],
          stack: 'reserved',
          pointRadius: 0,
          borderWidth: 1.5,
          fill: false,
          hidden: true,
        },
        // Beside it: what it would reserve with expandable segments the other way round.
        {
          type: 'line',
          label: 'Reserved, expandable segments toggled',
          data: [],
          borderColor: colors.ink,
          backgroundColor: colors.ink,
          borderDash: [2, 3],
          stack: 'toggled',
          pointRadius: 0,
          borderWidth: 1.5,
          fill: false,
          hidden: true,
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      layout: { padding: { right: peakRing.overflow } },
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: {
          // Every few moments named, as the width allows, and always the peak's own: the label
          // under the ring says where the sentence below puts it.
          ticks: {
            autoSkip: false,
            maxRotation: 0,
            callback(value, index) {
              const every = Math.max(
                1,
                Math.ceil((chart.data.labels.length * TIMELINE_TICK_PX) / this.width),
              );
              const nearPeak = Math.abs(index - peakAt) < every;
              return index === peakAt || (index % every === 0 && !nearPeak) ? chart.data.labels[index] : null;
            },
          },
          title: { display: true, text: 'One training step' },
        },
        y: { stacked: true, beginAtZero: true, ticks: { callback: (value) => formatBytesShort(value) } },
      },
      plugins: {
        legend: {
          labels: {
            boxWidth: 14,
            // Only the parts the step holds, and the reserved line when it is drawn.
            filter: (item, chartData) =>
              !chartData.datasets[item.datasetIndex].hidden &&
              chartData.datasets[item.datasetIndex].data.some((bytes) => bytes > 0),
          },
        },
        tooltip: {
          filter: (item) => item.parsed.y > 0,
          callbacks: { label: (item) => `${item.dataset.label}: ${formatBytes(item.parsed.y)}` },
        },
        marks: { colors, labels: [] },
      },
    },
  });
  return {
    /**
     * Draws the step's `points`; `toggled`, the same step's points with expandable segments the
     * other way round (labelled `toggledLabel`), draws its reserved line beside (none: hidden).
     */
    update(points, peakIndex, peakLabel, toggled = [], toggledLabel = '') {
      chart.data.labels = points.map((point) =>
        point.layer > 0 ? `${point.phase} ${point.layer}` : point.phase,
      );
      parts.forEach((part, index) => {
        chart.data.datasets[index].data = points.map((point) => point.held[part.apiKey]);
      });
      peakAt = peakIndex;
      peakRing.set({ x: peakIndex, y: points[peakIndex].bytes });
      const showReserved = points.some((point) => point.reservedBytes !== point.bytes);
      chart.data.datasets[reserved].data = points.map((point) => point.reservedBytes);
      chart.data.datasets[reserved].hidden = !showReserved;
      const other = chart.data.datasets[reserved + 1];
      other.data = toggled.length === points.length ? toggled.map((point) => point.reservedBytes) : [];
      other.label = toggledLabel;
      other.hidden = other.data.length === 0;
      chart.options.plugins.marks.labels = [{ x: peakIndex, y: points[peakIndex].bytes, text: peakLabel }];
      chart.update('none');
    },
    /** The moments named under the axis (the browser tests read it). */
    namedMoments: () => chart.scales.x.ticks.map((tick) => tick.label).filter(Boolean),
  };
}
