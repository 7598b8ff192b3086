// The floor for a Chart.js page: the plate's two charts (a stacked bar of five terms and a
// two-line chart of 16 points) drawn from a fixed table, with no WebAssembly, no plugin and no
// page code beyond a slider whose 'input' swaps the datasets. bench.mjs bundles it as app.js.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  PointElement,
  Tooltip,
} from 'chart.js';

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
);

const MAX_SEQUENCES = 16;
const TOKENS_PER_SEQUENCE = 8192;

// Llama 3 8B, in bytes, as the CLI prints them: the four model-state terms, and the activations
// of one sequence with and without FlashAttention (they grow linearly with the sequences).
const TERMS = [
  { label: 'Weights (BF16)', color: '#2f5f98', bytes: 16060522496 },
  { label: 'Gradients (BF16)', color: '#7fa7d4', bytes: 16060522496 },
  { label: 'Master weights (FP32)', color: '#d08a2c', bytes: 32121044992 },
  { label: 'Adam moments (FP32)', color: '#8a4b22', bytes: 64242089984 },
];
const ACTIVATIONS_PER_SEQUENCE = { flash: 36507222016, noFlash: 380104605696 };

/** One row per slider position: the bar's five values and the two 16-point curves. */
const TABLE = Array.from({ length: MAX_SEQUENCES }, (_, index) => {
  const sequences = index + 1;
  const curve = (perSequence) =>
    Array.from({ length: MAX_SEQUENCES }, (_, point) => ({
      x: (point + 1) * TOKENS_PER_SEQUENCE,
      y: (point + 1) * perSequence,
    }));
  return {
    bar: [...TERMS.map((term) => term.bytes), sequences * ACTIVATIONS_PER_SEQUENCE.flash],
    flash: curve(ACTIVATIONS_PER_SEQUENCE.flash),
    noFlash: curve(ACTIVATIONS_PER_SEQUENCE.noFlash),
  };
});

const common = { responsive: true, maintainAspectRatio: false, animation: false };
const gigabytes = { callback: (value) => `${Math.round(value / 1e9)} GB` };

const breakdown = new Chart(document.getElementById('breakdown-chart'), {
  type: 'bar',
  data: {
    labels: ['Llama 3 8B'],
    datasets: [...TERMS, { label: 'Activations', color: '#3d8b57' }].map((term) => ({
      label: term.label,
      data: [0],
      backgroundColor: term.color,
    })),
  },
  options: {
    ...common,
    scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: gigabytes } },
    plugins: { legend: { position: 'bottom' } },
  },
});

const activations = new Chart(document.getElementById('activations-chart'), {
  type: 'line',
  data: {
    datasets: [
      { label: 'With FlashAttention', data: [], borderColor: '#3d8b57', pointRadius: 2 },
      { label: 'Without FlashAttention', data: [], borderColor: '#b8433a', pointRadius: 2 },
    ],
  },
  options: {
    ...common,
    scales: { x: { type: 'linear' }, y: { beginAtZero: true, ticks: gigabytes } },
  },
});

/** Replaces both charts' datasets from the table row for `sequences` and redraws them. */
function draw(sequences) {
  const row = TABLE[sequences - 1];
  row.bar.forEach((bytes, index) => {
    breakdown.data.datasets[index].data = [bytes];
  });
  activations.data.datasets[0].data = row.flash;
  activations.data.datasets[1].data = row.noFlash;
  breakdown.update('none');
  activations.update('none');
}

const slider = document.getElementById('tokens-slider');
slider.addEventListener('input', () => draw(Number(slider.value)));
draw(Number(slider.value));
// Drawn, and answering input: the two moments trainmem's page marks apart are one here.
performance.mark('trainmem:charts-drawn'); // the moment trace.mjs splits the time up to
document.body.dataset.charts = 'drawn';
document.body.dataset.ready = 'true';
