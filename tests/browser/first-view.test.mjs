// The first view: the plate's default figures and charts written into the page at build time,
// shown before the WebAssembly arrives and with scripts off, the same as the core's live view; and
// a right chart a student can read.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { chromium } from 'playwright-core';
import { serveFolder } from '../../scripts/serve.mjs';
import { launchOptions } from './chromium.mjs';
import { FORBIDDEN_TEXT, commit, startHarness } from './harness.mjs';

const PLATE_READOUT =
  'Llama 3 8B needs 165.0 GB to train on one device: 128.5 GB of model states (16 bytes × 8.03 B ' +
  'parameters) and 36.5 GB of activations for 8,192 tokens per micro-batch (1 sequence), ' +
  "FlashAttention on. That is 2.1 H100s' worth of memory, at 80 GB each. Not counted: the output " +
  "layer's logits and loss, 12.6 GB more as a run computes them (loss: FP32 upcast, unfused).";

/** Whether a canvas has any pixel that is not fully transparent. */
const painted = (page, id) =>
  page.evaluate((canvasId) => {
    const canvas = document.getElementById(canvasId);
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let index = 3; index < pixels.length; index += 4) if (pixels[index] !== 0) return true;
    return false;
  }, id);

/**
 * Whether the right chart has dark ink (the ring's, darker than the curves and the grid) within
 * 2 CSS pixels of each of `points` ({x, y} in CSS pixels), in order.
 */
const inkedAt = (page, points) =>
  page.evaluate((places) => {
    const canvas = document.getElementById('activations-chart');
    const scale = canvas.width / canvas.getBoundingClientRect().width;
    const size = Math.ceil(4 * scale);
    return places.map(({ x, y }) => {
      const { data } = canvas
        .getContext('2d')
        .getImageData(Math.round((x - 2) * scale), Math.round((y - 2) * scale), size, size);
      for (let index = 0; index < data.length; index += 4) {
        if (data[index + 3] > 200 && data[index] + data[index + 1] + data[index + 2] < 3 * 90) return true;
      }
      return false;
    });
  }, points);

describe('the first view', () => {
  let harness;
  let served;
  let browser;
  before(async () => {
    harness = await startHarness();
    served = await serveFolder('dist');
    browser = await chromium.launch(launchOptions);
  });
  after(async () => {
    await browser?.close();
    served?.server.close();
    await harness?.close();
  });

  it("reads with scripts off: the plate's default figures are in the page as text", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(served.url);
    const text = await page.evaluate(() => document.body.innerText);
    assert.equal((await page.textContent('#readout')).trim(), PLATE_READOUT);
    assert.match(text, /165\.0 GB/);
    assert.match(text, /2\.1 H100s/);
    // The prose's figures, filled at build time, and the controls that need a script set aside.
    assert.equal(await page.textContent('[data-figure="states-8b"]'), '128.5 GB');
    assert.equal(await page.textContent('[data-figure="total-8b-no-flash"]'), '508.6 GB');
    assert.equal(await page.isVisible('#controls'), false);
    assert.match(text, /need JavaScript/);
    assert.doesNotMatch(text, FORBIDDEN_TEXT);
    await context.close();
  });

  it('draws both charts and the readout before the WebAssembly arrives', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // The estimator never arrives: what shows is the build's first view alone.
    await page.route(/trainmem\.(wasm|js)$/, () => {});
    await page.goto(served.url, { waitUntil: 'domcontentloaded' }); // 'load' waits on the estimator
    await page.waitForSelector('body[data-charts="drawn"]');
    assert.equal(await page.evaluate(() => document.body.dataset.ready), undefined);
    assert.equal((await page.textContent('#readout')).trim(), PLATE_READOUT);
    assert.equal(await painted(page, 'breakdown-chart'), true);
    assert.equal(await painted(page, 'activations-chart'), true);
    await context.close();
  });

  it('carries its stylesheet inside, let in by the policy through its hash, and fetches none', async () => {
    const context = await browser.newContext();
    await context.addInitScript(() => {
      window.__violations = [];
      document.addEventListener('securitypolicyviolation', (event) =>
        window.__violations.push(`${event.violatedDirective} ${event.blockedURI}`),
      );
    });
    const page = await context.newPage();
    const stylesheets = [];
    page.on(
      'request',
      (request) => request.resourceType() === 'stylesheet' && stylesheets.push(request.url()),
    );
    await page.goto(served.url);
    await page.waitForSelector('body[data-ready="true"]');
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(stylesheets, []);
    // The sheet applies: the workshop's card and the page's paper colour (styles.css).
    const styles = await page.evaluate(() => ({
      paper: getComputedStyle(document.body).backgroundColor,
      card: getComputedStyle(document.getElementById('workshop')).borderTopStyle,
    }));
    assert.deepEqual(styles, { paper: 'rgb(251, 249, 244)', card: 'solid' });
    await context.close();
  });

  it("is the core's live view: the same words once the estimator has taken over", async () => {
    const built = readFileSync('dist/index.html', 'utf8');
    const builtReadout = /<p class="readout" id="readout"[^>]*>([^<]*)<\/p>/.exec(built)[1];
    const builtNote = /<p class="chart-note" id="activations-note">([^<]*)<\/p>/.exec(built)[1];
    const { page, problems } = await harness.openPage();
    assert.equal(await page.textContent('#readout'), builtReadout.replace(/&#39;|&apos;/g, "'"));
    assert.equal(await page.textContent('#activations-note'), builtNote);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('shows no default figures for a link to another view while the estimator loads', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.route(/trainmem\.(wasm|js)$/, () => {});
    await page.goto(`${served.url}?model=llama3-70b`, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('Loading'));
    assert.equal(await page.evaluate(() => document.body.dataset.charts), undefined);
    assert.equal(await page.textContent('#activations-note'), '');
    await context.close();
  });
});

describe('the right chart', () => {
  let harness;
  before(async () => {
    harness = await startHarness();
  });
  after(() => harness?.close());

  const geometry = (page) => page.evaluate(() => globalThis.trainmemPage.charts.activationsGeometry());

  it("keeps the FlashAttention curve off the floor: at the plate's defaults it spans a quarter of the plot or more", async () => {
    const { page } = await harness.openPage();
    const { plot, flash } = await geometry(page);
    const ys = flash.map((point) => point.y);
    const drawnHeight = Math.max(...ys) - Math.min(...ys);
    assert.ok(
      drawnHeight >= 0.25 * (plot.bottom - plot.top),
      `the curve spans ${drawnHeight.toFixed(0)} of ${(plot.bottom - plot.top).toFixed(0)} px`,
    );
    // Both curves lie inside the plot, whatever their ratio.
    for (const point of [...flash, ...(await geometry(page)).noFlash]) {
      assert.ok(point.y >= plot.top - 0.5 && point.y <= plot.bottom + 0.5);
    }
    await page.close();
  });

  it('stays readable for the largest model at the longest micro-batch, and without FlashAttention', async () => {
    const { page } = await harness.openPage({
      query: '?model=llama3-405b&tokens=131072&flash-attention=off',
    });
    const { plot, flash, noFlash } = await geometry(page);
    const ys = flash.map((point) => point.y);
    assert.ok(Math.max(...ys) - Math.min(...ys) >= 0.25 * (plot.bottom - plot.top));
    for (const point of [...flash, ...noFlash]) {
      assert.ok(point.y >= plot.top - 0.5 && point.y <= plot.bottom + 0.5);
    }
    await page.close();
  });

  it("draws the chosen point's ring whole, at the plot's corner too", async () => {
    const { page } = await harness.openPage();
    const { ring, width, height } = await geometry(page);
    assert.equal(ring.shown, true);
    assert.ok(ring.x - ring.outerRadius >= 0 && ring.x + ring.outerRadius <= width, `ring at x ${ring.x}`);
    assert.ok(ring.y - ring.outerRadius >= 0 && ring.y + ring.outerRadius <= height, `ring at y ${ring.y}`);
    // Drawn past the plot's edge, not cut by it: dark ink on the ring's far left and bottom.
    const radius = ring.outerRadius - 1.25;
    const inked = await inkedAt(page, [
      { x: ring.x - radius, y: ring.y },
      { x: ring.x, y: ring.y + radius },
    ]);
    assert.deepEqual(inked, [true, true]);
    await page.close();
  });

  it('moves the ring along its curve as the micro-batch is dragged, and hides it with its curve', async () => {
    const { page } = await harness.openPage();
    // Ink of the ring's border just inside its right edge, where only it is that dark.
    const ringInked = async (ring) =>
      (await inkedAt(page, [{ x: ring.x + ring.outerRadius - 1.25, y: ring.y }]))[0];
    const drag = (sequences) =>
      page.evaluate((value) => {
        const slider = document.getElementById('tokens-slider');
        slider.value = String(value);
        slider.dispatchEvent(new Event('input'));
      }, sequences);
    const before = await geometry(page);
    await drag(5);
    const moved = await geometry(page);
    assert.deepEqual(moved.flash, before.flash, 'the curves stay where they were');
    assert.ok(
      Math.abs(moved.ring.x - moved.flash[4].x) < 0.5 && Math.abs(moved.ring.y - moved.flash[4].y) < 0.5,
    );
    assert.equal(await ringInked(moved.ring), true, 'the ring is drawn where it now is');
    assert.equal(await ringInked(before.ring), false, 'and no longer where it was');
    // Without FlashAttention the ring is on the other curve, at the same micro-batch.
    await page.uncheck('#flash-attention');
    const other = await geometry(page);
    assert.ok(
      Math.abs(other.ring.x - other.noFlash[4].x) < 0.5 && Math.abs(other.ring.y - other.noFlash[4].y) < 0.5,
    );
    assert.equal(await ringInked(other.ring), true);
    // A click on the curve's name in the legend hides the curve and its ring; another brings both back.
    // Chart.js handles a click at the next animation frame: wait for the ring to show or hide.
    const legendClick = async (shown) => {
      const centre = other.legendCentres['Without FlashAttention'];
      await page.locator('#activations-chart').click({ position: centre });
      await page.waitForFunction(
        (expected) => globalThis.trainmemPage.charts.activationsGeometry().ring.shown === expected,
        shown,
      );
    };
    await legendClick(false);
    assert.equal(await ringInked(other.ring), false);
    await legendClick(true);
    assert.equal(await ringInked(other.ring), true);
    // After moves of the ring alone, a layout that leaves room redraws the chart whole: the room's
    // line and its name, the axis it needs, and the ring on the curve where it now lies.
    await page.check('#flash-attention');
    await drag(9);
    await commit(page, '#dp', '8');
    await page.selectOption('#zero', '3');
    const spread = await geometry(page);
    assert.ok(spread.legend.includes('Room for activations on one H100 80 GB'), spread.legend.join());
    assert.notDeepEqual(spread.flash, moved.flash, 'the curves are drawn anew');
    assert.ok(
      Math.abs(spread.ring.x - spread.flash[8].x) < 0.5 && Math.abs(spread.ring.y - spread.flash[8].y) < 0.5,
    );
    assert.equal(await ringInked(spread.ring), true);
    await page.close();
  });

  it("names the device's line in the legend, clear of the curves, when the device has room", async () => {
    const { page } = await harness.openPage({ query: '?dp=8&zero=3&tp=2&sequence-parallel=on' });
    assert.ok((await geometry(page)).legend.includes('Room for activations on one H100 80 GB'));
    await page.close();
    const plate = await harness.openPage();
    assert.deepEqual((await geometry(plate.page)).legend, ['With FlashAttention', 'Without FlashAttention']);
    await plate.page.close();
  });
});
