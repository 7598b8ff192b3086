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
  { key: 'weightsBytes', perParameterKey: 'weights', label: 'Weights', color: '#2f5f98' },
  { key: 'gradientsBytes', perParameterKey: 'gradients', label: 'Gradients', color: '#7fa7d4' },
  { key: 'masterWeightsBytes', perParameterKey: 'masterWeights', label: 'Master weights', color: '#d08a2c' },
  {
    key: 'optimizerStatesBytes',
    perParameterKey: 'optimizerStates',
    label: 'Optimiser states',
    color: '#8a4b22',
  },
  { key: 'activationsBytes', label: 'Activations', color: '#3d8b57' },
  { key: 'logitsBytes', label: 'Logits and loss', color: '#7a5c99' },
]);

const FLASH_COLOR = '#3d8b57';
const NO_FLASH_COLOR = '#b8433a';
const CAPACITY_COLOR = '#1d1d1b';

function capacityLine(capacityBytes, label) {
  return {
    type: 'line',
    yMin: capacityBytes,
    yMax: capacityBytes,
    borderColor: CAPACITY_COLOR,
    borderWidth: 1.5,
    borderDash: [6, 4],
    label: {
      display: true,
      content: label,
      position: 'start',
      backgroundColor: 'rgba(255,255,255,0.85)',
      color: CAPACITY_COLOR,
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
  Chart.defaults.color = '#3a3a36';
  const byteTicks = { callback: (value) => formatBytesShort(value) };
  const common = {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    interaction: { mode: 'nearest', intersect: false },
  };

  const breakdown = new Chart(breakdownCanvas, {
    type: 'bar',
    data: {
      labels: [''],
      datasets: TERMS.map((term) => ({
        label: term.label,
        data: [0],
        backgroundColor: term.color,
        borderColor: '#ffffff',
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
            filter: (item, data) => data.datasets[item.datasetIndex].data[0] > 0 || item.datasetIndex < 5,
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
    /** Redraws both charts from one workshop view. */
    update(view) {
      const { estimate, activationCurve } = view;
      const capacityLabel = `One ${estimate.device.name}`;

      perParameter = estimate.bytesPerParameter;
      breakdown.data.labels = [
        estimate.numDevices === 1
          ? estimate.modelName
          : `${estimate.modelName}: most loaded of ${formatCount(estimate.numDevices)} devices`,
      ];
      TERMS.forEach((term, index) => {
        breakdown.data.datasets[index].data = [estimate.bytes[term.key]];
      });
      breakdown.options.plugins.annotation.annotations = {
        capacity: capacityLine(estimate.device.capacityBytes, capacityLabel),
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
      activations.options.plugins.annotation.annotations = {
        capacity: capacityLine(estimate.device.capacityBytes, capacityLabel),
        choice: {
          type: 'point',
          xValue: estimate.tokensPerMicroBatch,
          yValue: estimate.bytes.activationsBytes,
          radius: 7,
          borderWidth: 2.5,
          borderColor: CAPACITY_COLOR,
          backgroundColor: 'rgba(0,0,0,0)',
        },
      };
      activations.update('none');
    },
  };
}
