// The built page in Debian's Chromium: the plate's figures, every control redrawing the readout
// and both charts, bad input refused without losing the view, and no traffic off the page's origin.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodyText, canvases, commit, FORBIDDEN_TEXT, readout, startHarness, tableRows } from './harness.mjs';

describe('the plate page in Chromium', () => {
  let harness;
  let openPage;

  before(async () => {
    harness = await startHarness();
    openPage = harness.openPage;
  });

  after(async () => {
    await harness?.close();
  });

  it('opens on the plate view: Llama 3 8B, 8,192 tokens, FlashAttention, 165.0 GB', async () => {
    const { page, problems } = await openPage();
    assert.equal(await page.inputValue('#model'), 'llama3-8b');
    assert.equal(await page.inputValue('#tokens'), '8192');
    assert.equal(await page.inputValue('#tokens-slider'), '1');
    assert.equal(await page.isChecked('#flash-attention'), true);
    const text = await readout(page);
    assert.match(text, /Llama 3 8B needs 165\.0 GB/);
    assert.match(text, /128\.5 GB of model states/);
    assert.match(text, /36\.5 GB of activations/);
    assert.match(text, /2\.1 H100s' worth/);
    await page.click('.numbers summary');
    await page.waitForSelector('#breakdown-table tbody tr');
    assert.deepEqual(await tableRows(page, '#breakdown-table'), [
      ['Weights', '2', '16.1 GB'],
      ['Gradients', '2', '16.1 GB'],
      ['Master weights', '4', '32.1 GB'],
      ['Optimiser states', '8', '64.2 GB'],
      ['Activations', '—', '36.5 GB'],
      ['Total', '16 + activations', '165.0 GB'],
    ]);
    assert.equal(await page.locator('#activations-table tbody tr').count(), 16);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("fills the prose's figures from the core: 8.03 B, 128.5 GB, 36.5 GB, 165.0 GB, 2.1, 508.6 GB, 6.5 TB, 88", async () => {
    const { page, problems } = await openPage();
    const figures = await page.$$eval('[data-figure]', (spans) =>
      Object.fromEntries(spans.map((span) => [span.dataset.figure, span.textContent])),
    );
    assert.deepEqual(figures, {
      'params-8b': '8.03 B',
      'states-8b': '128.5 GB',
      'activations-8b': '36.5 GB',
      'total-8b': '165.0 GB',
      'worth-8b': '2.1',
      'total-8b-no-flash': '508.6 GB',
      'states-405b': '6.5 TB',
      'worth-405b': '88',
      'llama-block-activations-8b': '36.5 GB',
      'devices-per-node': '8',
      'min-tokens-per-shard': '4,096',
    });
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('redraws the readout and both charts when each control changes', async () => {
    const { page, problems } = await openPage();
    const steps = [
      ['model', () => page.selectOption('#model', 'llama3-70b'), /Llama 3 70B needs/],
      ['slider', () => page.fill('#tokens-slider', '4'), /32,768 tokens per micro-batch \(4 sequences\)/],
      [
        'tokens field',
        () => commit(page, '#tokens', '65536'),
        /65,536 tokens per micro-batch \(8 sequences\)/,
      ],
      ['FlashAttention', () => page.uncheck('#flash-attention'), /FlashAttention off/],
    ];
    for (const [name, act, expected] of steps) {
      const beforeText = await readout(page);
      const beforeCharts = await canvases(page);
      await act();
      const afterText = await readout(page);
      const afterCharts = await canvases(page);
      assert.notEqual(afterText, beforeText, `${name}: readout changed`);
      assert.match(afterText, expected, `${name}: readout says the new setting`);
      assert.notEqual(afterCharts.breakdown, beforeCharts.breakdown, `${name}: left chart redrawn`);
      assert.notEqual(afterCharts.activations, beforeCharts.activations, `${name}: right chart redrawn`);
    }
    assert.equal(await page.inputValue('#tokens-slider'), '8', 'the slider follows the typed tokens');
    assert.equal(await page.inputValue('#tokens'), '65536', 'the field follows the slider');
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('keeps a term the reader hid in the bar chart’s legend hidden while other terms come and go', async () => {
    const { page, problems } = await harness.openPage();
    const legend = () => page.evaluate(() => globalThis.trainmemPage.charts.breakdownLegend());
    const hidden = async (start) =>
      (await legend()).items.find((item) => item.text.startsWith(start))?.hidden;
    const { centres } = await legend();
    const weights = Object.keys(centres).find((text) => text.startsWith('Weights'));
    await page.locator('#breakdown-chart').click({ position: centres[weights] });
    // Chart.js handles a click at the next animation frame.
    await page.waitForFunction(
      () =>
        globalThis.trainmemPage.charts.breakdownLegend().items.find((item) => item.text.startsWith('Weights'))
          .hidden,
    );
    // The logits and loss bring a term of their own into the bar, and take it away.
    await page.check('#logits');
    assert.equal(await hidden('Logits'), false);
    assert.equal(await hidden('Weights'), true, 'the weights stay hidden as the logits come');
    await page.uncheck('#logits');
    assert.equal(await hidden('Logits'), undefined);
    assert.equal(await hidden('Weights'), true, 'and as they go');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('refuses bad tokens with a message by the field and keeps the last good view', async () => {
    const { page, problems } = await openPage();
    await page.fill('#tokens-slider', '2');
    const goodText = await readout(page);
    const goodCharts = await canvases(page);
    for (const bad of ['1000', '0', '-8192', 'abc', '', '1e400', '139264', '8192.5']) {
      await commit(page, '#tokens', bad);
      const error = page.locator('#tokens-error');
      assert.equal(await error.isVisible(), true, `message shown for '${bad}'`);
      assert.equal(
        await error.textContent(),
        'Tokens per micro-batch must be a whole multiple of 8,192 (one sequence), from 8,192 to 131,072.',
      );
      assert.equal(await page.getAttribute('#tokens', 'aria-invalid'), 'true');
      assert.equal(await readout(page), goodText, `readout kept for '${bad}'`);
      assert.deepEqual(await canvases(page), goodCharts, `charts kept for '${bad}'`);
      assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    }
    await commit(page, '#tokens', '24576');
    assert.equal(await page.locator('#tokens-error').isVisible(), false, 'a good value clears the message');
    assert.match(await readout(page), /24,576 tokens per micro-batch \(3 sequences\)/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('lays out at a phone width without sideways scrolling', async () => {
    const { page, problems } = await openPage({ viewport: { width: 390, height: 844 } });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `page is ${overflow}px wider than the screen`);
    // No text runs past its own box either (a long environment variable in a hint, cut off).
    const cut = await page.evaluate(() =>
      [...document.querySelectorAll('.hint, label, .error')]
        .filter((element) => element.clientWidth > 0 && element.scrollWidth > element.clientWidth + 1)
        .map((element) => element.id || element.textContent.slice(0, 40)),
    );
    assert.deepEqual(cut, []);
    assert.match(await readout(page), /165\.0 GB/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("shows the workshop's heading and every control on a laptop's first screen (1366 × 768)", async () => {
    const { page, problems } = await openPage({ viewport: { width: 1366, height: 768 }, further: false });
    const below = await page.evaluate(() =>
      ['#workshop-title', '#model', '#tokens-slider', '#tokens', '#flash-attention']
        .map((selector) => [selector, document.querySelector(selector).getBoundingClientRect()])
        .filter(([, box]) => box.height === 0 || box.top < 0 || box.bottom > window.innerHeight)
        .map(([selector, box]) => `${selector} at ${Math.round(box.top)}–${Math.round(box.bottom)} px`),
    );
    assert.deepEqual(below, []);
    assert.deepEqual(problems, []);
    await page.close();
  });

  for (const [id, summary] of [
    ['arithmetic', 'Show the arithmetic'],
    ['timeline', 'Memory over one training step'],
    ['savings', 'What saves the most'],
  ]) {
    it(`takes a student from the plate's view to "${summary}" in one click, open and in view`, async () => {
      const { page, problems } = await openPage({ viewport: { width: 1366, height: 768 }, further: false });
      await page.click(`[data-opens="${id}"]`);
      await page.waitForFunction((panel) => document.getElementById(panel)?.open, id);
      // Its summary has the focus, and the panel's top is on screen.
      assert.equal(await page.evaluate(() => document.activeElement.textContent), summary);
      const top = await page.evaluate(
        (panel) => document.getElementById(panel).getBoundingClientRect().top,
        id,
      );
      assert.ok(top > -1 && top < 768 / 2, `${id} opens at ${top} px`);
      // Its content arrives: the arithmetic's terms, the step's sentence, the ranked changes.
      const filled = {
        arithmetic: '#arithmetic-list dt',
        timeline: '#timeline-summary:not(:empty)',
        savings: '#savings-list li',
      };
      await page.waitForSelector(filled[id]);
      assert.doesNotMatch(await page.textContent(`#${id}`), FORBIDDEN_TEXT);
      assert.deepEqual(problems, []);
      await page.close();
    });
  }
});
