// Where the page's main-thread time goes: a Chromium trace of a fresh load of the built page
// (dist/) and of a slider drag, split into parsing the HTML, parsing and compiling app.js, building
// the charts, the WebAssembly (fetch, compile, instantiate), the first estimate, style, layout and
// paint, and the rest. The page marks its own phases with performance.measure ('trainmem:…'); the
// trace gives every main-thread event its self time, and each is put in one phase.
// Usage: node scripts/bench/trace.mjs [--markdown FILE]   (after a build; medians of RUNS loads)
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveFolder } from '../serve.mjs';
import { buildBaseline } from './baseline.mjs';
import { launchOptions } from '../../tests/browser/chromium.mjs';

const DIST = fileURLToPath(new URL('../../dist', import.meta.url));
const RUNS = 7;
const DRAG_STEPS = 60;
const VIEWPORT = { width: 1280, height: 900 };
const CATEGORIES = [
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'v8',
  'v8.execute',
  'v8.wasm',
  'blink.user_timing',
  'loading',
  'disabled-by-default-v8.compile',
];

// The page's own measures (web/src/main.js), each a phase of its script's time.
const MEASURES = {
  'trainmem:charts': 'Building and drawing the charts',
  'trainmem:first-estimate': 'The first estimate and its readout',
};
const PHASES = [
  'Parsing the HTML',
  'Parsing and compiling app.js',
  'Running app.js (besides the phases below)',
  ...Object.values(MEASURES),
  'WebAssembly: compiling and instantiating',
  'Style, layout and paint',
  'Garbage collection',
  'Other (navigation, loading, idle tasks)',
];
const PAINT = new Set([
  'UpdateLayoutTree',
  'Layout',
  'PrePaint',
  'Paint',
  'Layerize',
  'Commit',
  'UpdateLayer',
  'CompositeLayers',
  'ScheduleStyleRecalculation',
  'InvalidateLayout',
  'HitTest',
  'IntersectionObserverController::computeIntersections',
]);

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const percentile = (values, p) =>
  [...values].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * values.length) - 1)];

/** The renderer's main thread's complete events, with their self time (µs) and their ancestors. */
function mainThreadEvents(traceEvents) {
  const threads = traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name');
  const renderers = threads.filter((e) => e.args.name === 'CrRendererMain');
  // The page's renderer is the one that ran app.js.
  const main = renderers.find((thread) =>
    traceEvents.some(
      (e) => e.pid === thread.pid && e.tid === thread.tid && /app\.js/.test(e.args?.data?.url ?? ''),
    ),
  );
  const events = traceEvents
    .filter((e) => e.pid === main.pid && e.tid === main.tid && e.ph === 'X' && e.dur !== undefined)
    .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const stack = [];
  for (const event of events) {
    while (stack.length && stack.at(-1).ts + stack.at(-1).dur <= event.ts) stack.pop();
    event.parents = [...stack];
    event.self = event.dur;
    if (stack.length) stack.at(-1).self -= event.dur;
    stack.push(event);
  }
  const userTiming = traceEvents.filter((e) => e.pid === main.pid && e.cat.includes('blink.user_timing'));
  return { events, userTiming };
}

/** The [start, end] of each of the page's measures, from the trace's async user-timing events. */
function measureIntervals(userTiming) {
  const intervals = [];
  for (const name of Object.keys(MEASURES)) {
    const begin = userTiming.find((e) => e.name === name && (e.ph === 'b' || e.ph === 'B'));
    const end = userTiming.find((e) => e.name === name && (e.ph === 'e' || e.ph === 'E'));
    if (begin && end) intervals.push({ phase: MEASURES[name], start: begin.ts, end: end.ts });
  }
  return intervals;
}

const urlOf = (event) => event.args?.data?.url ?? event.args?.fileName ?? '';

const SCRIPT = new Set([
  'v8.run',
  'v8.callFunction',
  'FunctionCall',
  'EvaluateScript',
  'RunMicrotasks',
  'TimerFire',
  'EventDispatch',
  'FireAnimationFrame',
  'FireIdleCallback',
]);

/** The phase one event's self time belongs to. */
function phaseOf(event, intervals) {
  const chain = [...event.parents, event];
  const name = event.name;
  if (/^(V8\.GC|MinorGC|MajorGC|V8\.GCScavenger|BlinkGC|V8\.GC_)/.test(name)) return 'Garbage collection';
  if (
    /wasm/i.test(name) ||
    name === 'v8.newInstance' ||
    chain.some((e) => /trainmem\.(js|wasm)/.test(urlOf(e)))
  ) {
    return 'WebAssembly: compiling and instantiating';
  }
  if (PAINT.has(name)) return 'Style, layout and paint';
  if (/^(v8\.compile|V8\.Compile|V8\.Parse|V8\.PreParse|V8\.CollectSourcePositions)/.test(name)) {
    return 'Parsing and compiling app.js';
  }
  if (chain.some((e) => SCRIPT.has(e.name))) {
    const inside = intervals.find((interval) => event.ts >= interval.start && event.ts < interval.end);
    return inside ? inside.phase : 'Running app.js (besides the phases below)';
  }
  if (chain.some((e) => e.name === 'ParseHTML')) return 'Parsing the HTML';
  return 'Other (navigation, loading, idle tasks)';
}

/** Milliseconds of self time per phase, for events starting in [from, to). */
function split(events, intervals, from = -Infinity, to = Infinity) {
  const totals = Object.fromEntries(PHASES.map((phase) => [phase, 0]));
  for (const event of events) {
    if (event.ts < from || event.ts >= to) continue;
    totals[phaseOf(event, intervals)] += event.self / 1000;
  }
  return totals;
}

async function traced(browser, action) {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  await browser.startTracing(page, { categories: CATEGORIES });
  const result = await action(page);
  const { traceEvents } = JSON.parse((await browser.stopTracing()).toString());
  await context.close();
  return { traceEvents, result };
}

/**
 * One fresh load: the split up to the charts drawn (both pages mark it 'trainmem:charts-drawn'),
 * and, where the page has one, up to the core's first view ('trainmem:core-ready').
 */
async function traceLoad(browser, url) {
  const { traceEvents } = await traced(browser, async (page) => {
    await page.goto(url);
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
  });
  const { events, userTiming } = mainThreadEvents(traceEvents);
  const at = (name) => userTiming.find((e) => e.name === name)?.ts;
  const navigation = userTiming.find((e) => e.name === 'navigationStart')?.ts ?? events[0].ts;
  const intervals = measureIntervals(userTiming);
  const chartsDrawn = at('trainmem:charts-drawn');
  const coreReady = at('trainmem:core-ready');
  return {
    toCharts: split(events, intervals, -Infinity, chartsDrawn),
    toCore: coreReady === undefined ? undefined : split(events, intervals, -Infinity, coreReady),
    chartsDrawnMs: (chartsDrawn - navigation) / 1000,
    coreReadyMs: coreReady === undefined ? undefined : (coreReady - navigation) / 1000,
  };
}

/** A slider drag of DRAG_STEPS steps, each marked; main-thread time per step, by phase. */
async function traceDrag(browser, url) {
  const { traceEvents } = await traced(browser, async (page) => {
    await page.goto(url);
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    await page.evaluate(async (steps) => {
      const slider = document.getElementById('tokens-slider');
      const nextFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));
      const span = Number(slider.max) - Number(slider.min);
      for (let step = 1; step <= steps; step += 1) {
        await nextFrame();
        performance.mark('trainmem:drag-step');
        const phase = step % (2 * span);
        slider.value = String(Number(slider.min) + (phase <= span ? phase : 2 * span - phase));
        slider.dispatchEvent(new Event('input'));
      }
      await nextFrame();
      await nextFrame();
      performance.mark('trainmem:drag-step');
    }, DRAG_STEPS);
  });
  const { events, userTiming } = mainThreadEvents(traceEvents);
  const marks = userTiming.filter((e) => e.name === 'trainmem:drag-step').map((e) => e.ts);
  const perStep = [];
  for (let index = 0; index + 1 < marks.length; index += 1) {
    perStep.push(split(events, [], marks[index], marks[index + 1]));
  }
  return perStep;
}

const ms = (value) => (value === undefined ? '—' : `${value.toFixed(1)} ms`);

const sum = (totals) => Object.values(totals).reduce((a, b) => a + b, 0);

async function main() {
  const markdownIndex = process.argv.indexOf('--markdown');
  const markdownFile = markdownIndex >= 0 ? process.argv[markdownIndex + 1] : undefined;
  if (!existsSync(join(DIST, 'index.html'))) throw new Error('dist/ is missing: run `npm run build` first');
  const folder = await mkdtemp(join(tmpdir(), 'trainmem-trace-'));
  await buildBaseline(folder);
  const servers = await Promise.all([serveFolder(DIST, 0), serveFolder(folder, 0)]);
  const [pageUrl, baselineUrl] = servers.map((served) => served.url);
  const browser = await chromium.launch(launchOptions);
  try {
    const loads = { page: [], baseline: [] };
    for (let run = 0; run < RUNS; run += 1) {
      loads.page.push(await traceLoad(browser, pageUrl));
      loads.baseline.push(await traceLoad(browser, baselineUrl));
    }
    const drag = await traceDrag(browser, pageUrl);

    const column = (list, key, phase) => {
      const values = list.map((load) => load[key]).filter(Boolean);
      return values.length ? ms(median(values.map((totals) => (phase ? totals[phase] : sum(totals))))) : '—';
    };
    const lines = [
      `Main-thread time in Chromium ${browser.version()}, median of ${RUNS} traced fresh loads of`,
      `dist/ and of the baseline page, up to the charts drawn and up to the core's first view; and per`,
      `step of a ${DRAG_STEPS}-step slider drag. Tracing slows everything; compare the columns, not`,
      'the figures with `npm run bench`.',
      '',
      '| Phase | trainmem, to charts | baseline, to charts | trainmem, to core | drag step, median | drag step, p95 |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
    ];
    for (const phase of [...PHASES, null]) {
      const steps = drag.map((step) => (phase ? step[phase] : sum(step)));
      lines.push(
        `| ${phase ?? '**All**'} | ${column(loads.page, 'toCharts', phase)} | ` +
          `${column(loads.baseline, 'toCharts', phase)} | ${column(loads.page, 'toCore', phase)} | ` +
          `${ms(median(steps))} | ${ms(percentile(steps, 95))} |`,
      );
    }
    const moment = (list, key) => {
      const values = list.map((load) => load[key]).filter((value) => value !== undefined);
      return values.length ? ms(median(values)) : '—';
    };
    lines.push(
      `| Moment, from navigation start | ${moment(loads.page, 'chartsDrawnMs')} | ` +
        `${moment(loads.baseline, 'chartsDrawnMs')} | ${moment(loads.page, 'coreReadyMs')} | | |`,
    );
    const text = lines.join('\n');
    console.log(text);
    if (markdownFile) await writeFile(markdownFile, `${text}\n`);
  } finally {
    await browser.close();
    servers.forEach(({ server }) => server.close());
    await rm(folder, { recursive: true, force: true });
  }
}

await main();
