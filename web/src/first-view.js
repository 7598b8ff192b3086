// The page's first script (app.js), read right after the charts' canvases, before the rest of the
// page: the theme, the embedded layout and the two charts. For the plate's default view it draws
// the charts at once from the data the build wrote into index.html
// (the core's figures, computed at build time: scripts/build-web.mjs), before the estimator has
// even been fetched. Then it loads the estimator (trainmem.js) and the workshop (workshop.js),
// which take over: every later figure comes from the core, live.
import { createCharts, createTimelineChart } from './charts.js';
import { applyTheme, embed } from './readout.js';
import { readPresentation, PRESENTATION_KEYS } from './url.js';

/** Adds a classic script that runs in the order added, after those before it. */
function addOrderedScript(src) {
  const script = document.createElement('script');
  script.src = src;
  script.async = false;
  document.head.append(script);
}

/** The build's first view, or null (a page built without one, or a link to another view). */
function firstView() {
  const element = document.getElementById('first-view');
  const asksForAnother = [...new URLSearchParams(location.search).keys()].some(
    (key) => !PRESENTATION_KEYS.includes(key),
  );
  if (!element || asksForAnother) return null;
  return JSON.parse(element.textContent);
}

function start() {
  performance.mark('trainmem:start');
  // Before the charts read the palette.
  const presentation = readPresentation(location.search);
  applyTheme(presentation.theme);
  if (presentation.embedded) embed();

  const view = firstView();
  // Until the core is here, the charts word only the first view's own ticks.
  const label = (labels) => (value) => labels?.[String(value)] ?? '';
  const charts = createCharts({
    breakdownCanvas: document.getElementById('breakdown-chart'),
    activationsCanvas: document.getElementById('activations-chart'),
    formatters: {
      formatBytes: () => '',
      formatBytesShort: label(view?.labels.bytes),
      formatCount: label(view?.labels.tokens),
    },
    initial: view?.charts,
  });
  if (view) {
    performance.measure('trainmem:charts', 'trainmem:start');
    performance.mark('trainmem:charts-drawn');
    document.body.dataset.charts = 'drawn';
  } else {
    // The words written at build time are the default view's; this link asks for another.
    document.getElementById('readout').textContent = 'Loading the estimator…';
    document.getElementById('activations-note').textContent = '';
  }

  globalThis.trainmemPage = { charts, createTimelineChart, presentation };
  // After the frame that shows the charts (asking for scripts takes the main thread a while), or
  // in a tenth of a second where no frame comes (a hidden tab, a frame scrolled out of view).
  let asked = false;
  const loadTheRest = () => {
    if (asked) return;
    asked = true;
    addOrderedScript('trainmem.js');
    addOrderedScript('workshop.js');
  };
  requestAnimationFrame(() => setTimeout(loadTheRest));
  setTimeout(loadTheRest, 100);
}

start();
