// The charts' parts that Chart.js does not draw itself: each term's fill with its own marks, the
// page's palette, the card behind an exported PNG, the device's dashed line and the timeline's peak
// label (the `marks` plugin), and a ring around one chosen point (ringMark). charts.js builds the
// charts from them.
import { Chart } from 'chart.js';

const PATTERN_SIZE = 10;
let tileContext = null;

/**
 * A term's fill: its colour with its own marks (dots, diagonals, cross-hatching, rows), so that
 * the terms can be told apart without colour, in the bar and in the legend alike.
 */
export function termFill(term) {
  if (term.marks === 'none') return term.color;
  // One tile for every term: a pattern keeps a copy of its canvas as it is when made, and a
  // canvas of its own for each term cost the first view 5 ms.
  tileContext ??= Object.assign(document.createElement('canvas'), {
    width: PATTERN_SIZE,
    height: PATTERN_SIZE,
  }).getContext('2d');
  const ctx = tileContext;
  ctx.clearRect(0, 0, PATTERN_SIZE, PATTERN_SIZE);
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
  if (term.marks === 'columns') line(size / 2, 0, size / 2, size);
  return ctx.createPattern(ctx.canvas, 'repeat');
}

/** Ink and grid colours from the page's CSS, so the charts follow a dark colour scheme too. */
export function theme() {
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
export const paperBackground = {
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

const LABEL_FONT = { size: 11 };

/** Text on the card's colour at (x, y), its baseline at y, aligned left or centred. */
function drawLabel(ctx, text, x, y, align, colors, bold = false) {
  ctx.font = `${bold ? 'bold ' : ''}${LABEL_FONT.size}px ${Chart.defaults.font.family}`;
  const width = ctx.measureText(text).width;
  const left = align === 'center' ? x - width / 2 : x;
  ctx.fillStyle = colors.card;
  ctx.fillRect(left - 3, y - LABEL_FONT.size - 2, width + 6, LABEL_FONT.size + 6);
  ctx.fillStyle = colors.ink;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'alphabetic';
  ctx.fillText(text, left, y);
}

/**
 * A line's label at its left end, above it, in the room left of the bars: on two lines (split at
 * the space nearest its middle) where one would run into them, as on a phone.
 */
function drawLineLabel(chart, text, y, colors) {
  const { ctx, chartArea } = chart;
  const bars = chart.getDatasetMeta(0).data;
  const room = Math.min(...bars.map((bar) => bar.x - bar.width / 2), chartArea.right) - chartArea.left - 12;
  ctx.font = `${LABEL_FONT.size}px ${Chart.defaults.font.family}`;
  let lines = [text];
  if (ctx.measureText(text).width > room && text.includes(' ')) {
    const spaces = [...text.matchAll(/ /g)].map((match) => match.index);
    const middle = spaces.reduce((best, at) =>
      Math.abs(at - text.length / 2) < Math.abs(best - text.length / 2) ? at : best,
    );
    lines = [text.slice(0, middle), text.slice(middle + 1)];
  }
  lines.forEach((line, index) => {
    const lineY = y - 5 - (lines.length - 1 - index) * (LABEL_FONT.size + 4);
    drawLabel(ctx, line, chartArea.left + 6, lineY, 'left', colors);
  });
}

/** A ring's line width, in CSS pixels. */
const RING_BORDER = 2.5;

/**
 * A ring of `radius` around one point of a chart: ink, hollow, drawn over the data and past the
 * plot's edge. Its `plugin` draws it, from set({x, y, dataset}); set() before a plain
 * chart.render() moves it, without updating a dataset (an option would be read as it was at the
 * last update). A ring on a series (`dataset`, its index) hides with it, as a legend click may
 * hide it. `overflow` is the room it needs past the plot, as Chart.js leaves for a point of its
 * size (getMaxOverflow): the chart's layout.padding on a side with no axis.
 */
export function ringMark(colors, radius) {
  let ring = null;
  /** Where the ring is drawn, in CSS pixels, and whether it shows. */
  const place = (chart) => ({
    x: chart.scales.x.getPixelForValue(ring.x),
    y: chart.scales.y.getPixelForValue(ring.y),
    outerRadius: radius + RING_BORDER / 2,
    shown: ring.dataset === undefined || chart.isDatasetVisible(ring.dataset),
  });
  return {
    set(next) {
      ring = next;
    },
    place,
    overflow: radius + RING_BORDER,
    plugin: {
      id: 'ring',
      afterDatasetsDraw(chart) {
        if (!ring) return;
        const { x, y, shown } = place(chart);
        if (!shown) return;
        const { ctx } = chart;
        ctx.save();
        ctx.strokeStyle = colors.ink;
        ctx.lineWidth = RING_BORDER;
        ctx.beginPath();
        ctx.arc(x, y, radius, 0, 2 * Math.PI);
        ctx.stroke();
        ctx.restore();
      },
    },
  };
}

/**
 * Marks over the data (options.plugins.marks): dashed lines across the plot at `lines[].y`, each
 * labelled at its left end, above it; and labels above points, `labels[]` at (x, y).
 */
export const marks = {
  id: 'marks',
  afterDatasetsDraw(chart, _args, options) {
    const { ctx, chartArea, scales } = chart;
    const colors = options.colors;
    ctx.save();
    for (const line of options.lines ?? []) {
      const y = scales.y.getPixelForValue(line.y);
      if (!(y >= chartArea.top && y <= chartArea.bottom)) continue;
      ctx.strokeStyle = colors.ink;
      ctx.lineWidth = 1.5;
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      ctx.moveTo(chartArea.left, y);
      ctx.lineTo(chartArea.right, y);
      ctx.stroke();
      ctx.setLineDash([]);
      if (line.label) drawLineLabel(chart, line.label, y, colors);
    }
    for (const label of options.labels ?? []) {
      const x = scales.x.getPixelForValue(label.x);
      const y = scales.y.getPixelForValue(label.y) - 14;
      drawLabel(ctx, label.text, x, Math.max(y, chartArea.top + LABEL_FONT.size), 'center', colors, true);
    }
    ctx.restore();
  },
};
