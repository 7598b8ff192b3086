// The plate's two charts. Each is created once; a redraw replaces the datasets' arrays and calls
// chart.update('none'). Only the Chart.js parts used here are registered.
import {
  BarController,
  BarElement,
  Chart,
  CategoryScale,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  PointElement,
  Tooltip,
} from 'chart.js';
import annotationPlugin from 'chartjs-plugin-annotation';
import { formatPerParameter } from './format.js';

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  PointElement,
  Tooltip,
  annotationPlugin,
);

/** The terms, in stacking order, with their colour and the core's fields they show. */
export const TERMS = Object.freeze([
  { key: 'weightsBytes', perParameterKey: 'weights', label: 'Weights', color: '#2f5f98', marks: 'none' },
  {
    key: 'gradientsBytes',
    perParameterKey: 'gradients',
    label: 'Gradients',
    color: '#7fa7d4',
    marks: 'dots',
  },
  {
    key: 'masterWeightsBytes',
    perParameterKey: 'masterWeights',
    label: 'Master weights',
    color: '#d08a2c',
    marks: 'rising',
  },
  {
    key: 'optimizerStatesBytes',
    perParameterKey: 'optimizerStates',
    label: 'Optimiser states',
    color: '#8a4b22',
    marks: 'cross',
  },
  { key: 'activationsBytes', label: 'Activations', color: '#3d8b57', marks: 'falling' },
  { key: 'logitsBytes', label: 'Logits and loss', color: '#7a5c99', marks: 'rows' },
]);

const PATTERN_SIZE = 10;

/**
 * A term's fill: its colour with its own marks (dots, diagonals, cross-hatching, rows), so that
 * the terms can be told apart without colour, in the bar and in the legend alike.
 */
function termFill(term) {
  if (term.marks === 'none') return term.color;
  const tile = document.createElement('canvas');
  tile.width = PATTERN_SIZE;
  tile.height = PATTERN_SIZE;
  const ctx = tile.getContext('2d');
  ctx.fillStyle = term.color;
  ctx.fillRect(0, 0, PATTERN_SIZE, PATTERN_SIZE);
  ctx.strokeStyle = 'rgba(255,255,255,0.6)';
  ctx.fillStyle = 'rgba(255,255,255,0.6)';
  ctx.lineWidth = 1.5;
  const line = (x1, y1, x2, y2) => {
    ctx.beginPath();
    ctx.moveTo(x1, y1);
    ctx.lineTo(x2, y2);
    ctx.stroke();
  };
  const size = PATTERN_SIZE;
  if (term.marks === 'dots') {
    ctx.beginPath();
    ctx.arc(size / 2, size / 2, 1.6, 0, 2 * Math.PI);
    ctx.fill();
  } else if (term.marks === 'rising' || term.marks === 'cross') {
    line(0, size, size, 0);
    line(-size / 2, size / 2, size / 2, -size / 2);
    line(size / 2, size * 1.5, size * 1.5, size / 2);
  }
  if (term.marks === 'falling' || term.marks === 'cross') {
    line(0, 0, size, size);
    line(-size / 2, size / 2, size / 2, size * 1.5);
    line(size / 2, -size / 2, size * 1.5, size / 2);
  }
  if (term.marks === 'rows') line(0, size / 2, size, size / 2);
  return ctx.createPattern(tile, 'repeat');
}

/** Ink and grid colours from the page's CSS, so the charts follow a dark colour scheme too. */
function theme() {
  const style = getComputedStyle(document.documentElement);
  const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
  return {
    ink: read('--ink', '#1d1d1b'),
    inkSoft: read('--ink-soft', '#55544f'),
    grid: read('--rule', '#d9d4c7'),
    card: read('--card', '#ffffff'),
  };
}

// Exported PNGs get the card's white behind them rather than a transparent background.
const paperBackground = {
  id: 'paperBackground',
  beforeDraw(chart) {
    const { ctx, width, height } = chart;
    ctx.save();
    ctx.globalCompositeOperation = 'destination-over';
    ctx.fillStyle = chart.options.plugins.paperBackground?.color ?? '#ffffff';
    ctx.fillRect(0, 0, width, height);
    ctx.restore();
  },
};

const FLASH_COLOR = '#3d8b57';
const NO_FLASH_COLOR = '#b8433a';

/** A dashed line across a chart at `capacityBytes`, labelled in the chart unless `label` is empty. */
function capacityLine(capacityBytes, label, colors) {
  return {
    type: 'line',
    yMin: capacityBytes,
    yMax: capacityBytes,
    borderColor: colors.ink,
    borderWidth: 1.5,
    borderDash: [6, 4],
    label: {
      display: label !== '',
      content: label,
      position: 'start',
      backgroundColor: colors.card,
      color: colors.ink,
      font: { size: 11 },
      padding: 3,
      yAdjust: -11,
    },
  };
}

export function createCharts({
  breakdownCanvas,
  activationsCanvas,
  formatBytes,
  formatBytesShort,
  formatCount,
}) {
  let tokenTicks = [];
  let perParameter = {};
  const legendText = (index) => {
    const term = TERMS[index];
    const bytes = perParameter[term.perParameterKey];
    return bytes === undefined ? term.label : `${term.label} (${formatPerParameter(bytes)} B/param)`;
  };
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  const colors = theme();
  Chart.defaults.color = colors.inkSoft;
  Chart.defaults.borderColor = colors.grid;
  Chart.defaults.plugins.paperBackground = { color: colors.card };
  const byteTicks = { callback: (value) => formatBytesShort(value) };
  const common = {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    interaction: { mode: 'nearest', intersect: false },
  };

  const breakdown = new Chart(breakdownCanvas, {
    type: 'bar',
    plugins: [paperBackground],
    data: {
      labels: [''],
      datasets: TERMS.map((term) => ({
        label: term.label,
        data: [0],
        backgroundColor: termFill(term),
        borderColor: colors.card,
        borderWidth: 1,
        maxBarThickness: 140,
      })),
    },
    options: {
      ...common,
      interaction: { mode: 'point', intersect: true },
      scales: {
        x: { stacked: true, grid: { display: false } },
        y: { stacked: true, beginAtZero: true, ticks: byteTicks, title: { display: true, text: 'Memory' } },
      },
      plugins: {
        legend: {
          position: 'bottom',
          labels: {
            boxWidth: 14,
            padding: 10,
            // Logits appear only when counted; state terms say their bytes per parameter.
            filter: (item, data) =>
              item.datasetIndex < 5 || data.datasets[item.datasetIndex].data.some((bytes) => bytes > 0),
            generateLabels: (chart) =>
              Chart.defaults.plugins.legend.labels.generateLabels(chart).map((item) => ({
                ...item,
                text: legendText(item.datasetIndex),
              })),
          },
        },
        tooltip: {
          callbacks: { label: (item) => `${item.dataset.label}: ${formatBytes(item.parsed.y)}` },
        },
        annotation: { clip: false, annotations: {} },
      },
    },
  });

  const activations = new Chart(activationsCanvas, {
    type: 'line',
    plugins: [paperBackground],
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
      ],
    },
    options: {
      ...common,
      scales: {
        x: {
          type: 'linear',
          // Ticks on whole micro-batches (1, 4, 8, 12, 16 sequences), not on round decimals.
          afterBuildTicks: (axis) => {
            axis.ticks = tokenTicks.map((value) => ({ value }));
          },
          ticks: { callback: (value) => formatCount(value), maxRotation: 0, autoSkipPadding: 12 },
          title: { display: true, text: 'Tokens per micro-batch' },
        },
        y: { beginAtZero: true, ticks: byteTicks, title: { display: true, text: 'Activations' } },
      },
      plugins: {
        legend: { position: 'top', labels: { boxWidth: 14, padding: 10 } },
        tooltip: {
          callbacks: {
            title: (items) => `${formatCount(items[0].parsed.x)} tokens`,
            label: (item) => `${item.dataset.label}: ${formatBytes(item.parsed.y)}`,
          },
        },
        annotation: { clip: false, annotations: {} },
      },
    },
  });

  return {
    /** A chart as a PNG data URL: "breakdown" or "activations". */
    toPng: (which) => (which === 'breakdown' ? breakdown : activations).toBase64Image('image/png'),

    /** Redraws both charts from one workshop view; a pinned estimate stands to the left. */
    update(view, pinned = null) {
      const { estimate, activationCurve } = view;
      const capacityLabel = `One ${estimate.device.name}`;
      const barLabel = (shown) =>
        shown.numDevices === 1
          ? shown.modelName
          : `${shown.modelName}: most loaded of ${formatCount(shown.numDevices)} devices`;
      const bars = pinned ? [pinned, estimate] : [estimate];

      perParameter = estimate.bytesPerParameter;
      breakdown.data.labels = pinned
        ? [`Pinned: ${barLabel(pinned)}`, `Now: ${barLabel(estimate)}`]
        : [barLabel(estimate)];
      TERMS.forEach((term, index) => {
        breakdown.data.datasets[index].data = bars.map((shown) => shown.bytes[term.key]);
      });
      breakdown.options.plugins.annotation.annotations = {
        capacity: capacityLine(estimate.device.capacityBytes, capacityLabel, colors),
      };
      breakdown.update('none');

      const first = activationCurve[0];
      const last = activationCurve[activationCurve.length - 1];
      activations.data.datasets[0].data = activationCurve.map((p) => ({
        x: p.tokens,
        y: p.flashAttentionBytes,
      }));
      activations.data.datasets[1].data = activationCurve.map((p) => ({
        x: p.tokens,
        y: p.withoutFlashAttentionBytes,
      }));
      tokenTicks = activationCurve
        .filter((point, index) => index === 0 || point.microBatchSequences % 4 === 0)
        .map((point) => point.tokens);
      activations.options.scales.x.min = first.tokens;
      activations.options.scales.x.max = last.tokens;
      // Against activations alone, the line is what the device has left for them once the model
      // states are held, at zero when the states alone exceed it (the note under the chart says it
      // in words, clear of the curves).
      const room = estimate.activationRoomBytes;
      // The ring marks the chosen micro-batch on its own curve, and hides with it.
      const series = estimate.setup.flashAttention ? 0 : 1;
      activations.options.plugins.annotation.annotations = {
        capacity: capacityLine(Math.max(room, 0), '', colors),
        choice: {
          display: ({ chart }) => chart.isDatasetVisible(series),
          type: 'point',
          xValue: estimate.tokensPerMicroBatch,
          yValue: estimate.bytes.activationsBytes,
          radius: 7,
          borderWidth: 2.5,
          borderColor: colors.ink,
          backgroundColor: 'rgba(0,0,0,0)',
        },
      };
      activations.update('none');
    },
  };
}

/** The step's timeline: memory on the most loaded device, point by point, with its peak marked. */
export function createTimelineChart(canvas, { formatBytes, formatBytesShort }) {
  const colors = theme();
  const chart = new Chart(canvas, {
    type: 'line',
    plugins: [paperBackground],
    data: {
      labels: [],
      datasets: [
        {
          label: 'Memory held',
          data: [],
          borderColor: TERMS[4].color,
          backgroundColor: TERMS[4].color,
          pointRadius: 0,
          borderWidth: 2,
          stepped: false,
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: {
          ticks: { autoSkipPadding: 16, maxRotation: 0 },
          title: { display: true, text: 'One training step' },
        },
        y: { beginAtZero: true, ticks: { callback: (value) => formatBytesShort(value) } },
      },
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { label: (item) => formatBytes(item.parsed.y) } },
        annotation: { clip: false, annotations: {} },
      },
    },
  });
  return {
    update(points, peakIndex, peakLabel) {
      chart.data.labels = points.map((point) =>
        point.layer > 0 ? `${point.phase} ${point.layer}` : point.phase,
      );
      chart.data.datasets[0].data = points.map((point) => point.bytes);
      chart.options.plugins.annotation.annotations = {
        peak: {
          type: 'point',
          xValue: peakIndex,
          yValue: points[peakIndex].bytes,
          radius: 6,
          borderWidth: 2.5,
          borderColor: colors.ink,
          backgroundColor: 'rgba(0,0,0,0)',
        },
        peakLabel: {
          type: 'label',
          xValue: peakIndex,
          yValue: points[peakIndex].bytes,
          yAdjust: -18,
          content: peakLabel,
          color: colors.ink,
          backgroundColor: colors.card,
          font: { size: 11, weight: 'bold' },
        },
      };
      chart.update('none');
    },
  };
}
