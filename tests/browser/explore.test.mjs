// The exploration views in Chromium: what saves the most, where it fits, and a pinned
// configuration compared with the current one. Each draws from the core and responds.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { canvases, readout, startHarness } from './harness.mjs';

describe('exploration views, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it('draws memory over one step, its peak named and equal to the estimate, and follows the controls', async () => {
    const { page, problems } = await harness.openPage();
    await page.click('#timeline summary');
    await page.waitForFunction(() => document.getElementById('timeline-summary').textContent !== '');
    assert.equal(
      await page.textContent('#timeline-summary'),
      "Peak: 165.0 GB at forward, layer 32, the estimate's total; the model states alone hold 128.5 GB throughout.",
    );
    const drawn = () => page.evaluate(() => document.getElementById('timeline-chart').toDataURL());
    const before = await drawn();
    await page.selectOption('#recompute', 'full');
    assert.match(
      await page.textContent('#timeline-summary'),
      /^Peak: 131\.7 GB at recompute, layer 32, the estimate's total/,
    );
    assert.match(await readout(page), /needs 131\.7 GB/);
    assert.notEqual(await drawn(), before);
    assert.deepEqual(problems, []);
    await page.close();
  });

  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    it(`names the peak's own moment under the step chart, where its sentence puts it (${viewport.width} px)`, async () => {
      const { page, problems } = await harness.openPage({ viewport });
      // The peak moves from the forward pass's last layer to its recomputation; the sentence and
      // the chart are drawn together, once the reopened view has its answer (until then the
      // sentence is the last one drawn).
      for (const [recompute, moment] of [
        ['none', 'at forward, layer 32'],
        ['full', 'at recompute, layer 32'],
      ]) {
        await page.selectOption('#recompute', recompute);
        await page.click('#timeline summary');
        await page.waitForFunction(
          (words) => document.getElementById('timeline-summary').textContent.includes(words),
          moment,
        );
        const [, phase, layer] = (await page.textContent('#timeline-summary')).match(/at (\w+), layer (\d+)/);
        const named = await page.evaluate(() => globalThis.trainmemPage.timeline.namedMoments());
        assert.ok(named.includes(`${phase} ${layer}`), `${named.join(' | ')} lacks ${phase} ${layer}`);
        assert.ok(named.length >= 2, `only ${named.length} moments named`);
        await page.click('#timeline summary');
      }
      assert.deepEqual(problems, []);
      await page.close();
    });
  }

  it('ranks single changes by the memory they save, and applies one', async () => {
    const { page, problems } = await harness.openPage({ query: '?flash-attention=off&tokens=32768' });
    await page.click('#savings summary');
    await page.waitForSelector('#savings-list li');
    const items = await page.$$eval('#savings-list li', (list) => list.map((item) => item.textContent));
    assert.ok(items.length >= 5);
    assert.match(items[0], /^Full recomputation: saves /);
    assert.ok(items.some((item) => /^Turn on FlashAttention: saves \d/.test(item)));
    await page.click('#savings-list li:first-child button');
    assert.match(await readout(page), /FlashAttention off/);
    assert.equal(await page.inputValue('#recompute'), 'full');
    const after = await page.$$eval('#savings-list li', (list) => list.map((item) => item.textContent));
    assert.ok(!after.some((item) => item.startsWith('Full recomputation')), 'the list follows the new setup');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('maps where it fits, marks what does not without colour, and sets the workshop from a cell', async () => {
    const { page, problems } = await harness.openPage({ query: '?dp=8&zero=3' });
    await page.click('#where-it-fits summary');
    await page.waitForSelector('#fit-map tbody tr');
    const rows = await page.$$eval('#fit-map tbody tr', (list) => list.map((row) => row.textContent));
    assert.equal(rows.length, 8);
    assert.match(rows[3], /^8,192/);
    const marked = await page.$$eval('#fit-map button.over', (buttons) => buttons.map((b) => b.textContent));
    assert.ok(marked.length > 0 && marked.every((text) => text.startsWith('✗ ')));
    assert.equal(
      await page.getAttribute('#fit-map tbody tr:nth-child(4) td:nth-child(2) button', 'aria-current'),
      'true',
      'the current cell is marked',
    );
    await page.click('#fit-map tbody tr:nth-child(2) td:nth-child(4) button');
    assert.match(await readout(page), /8,192 tokens per micro-batch \(4 sequences\)/);
    assert.equal(await page.inputValue('#seq-len'), '2048');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('loads Go further and the full module when a reader opens it, and says so when they cannot', async () => {
    const { page, problems } = await harness.openPage({ further: false });
    const asked = [];
    page.on('request', (request) => asked.push(new URL(request.url()).pathname));
    // The first view asks for neither the full module nor Go further's code.
    const loaded = await page.evaluate(() =>
      performance.getEntriesByType('resource').map((entry) => entry.name),
    );
    assert.ok(loaded.some((name) => name.endsWith('/trainmem.wasm')));
    for (const file of ['/trainmem-full.js', '/trainmem-full.wasm', '/further.js', '/explore.js']) {
      assert.ok(!loaded.some((name) => name.endsWith(file)), file);
    }
    await page.route('**/trainmem-full.js', (route) => route.abort());
    await page.click('#open-further');
    await page.waitForFunction(() =>
      /could not load/.test(document.getElementById('further-status').textContent),
    );
    assert.equal(
      await page.textContent('#further-status'),
      'Go further could not load (trainmem-full.js did not load). Try again.',
    );
    assert.equal(await page.getAttribute('#open-further', 'aria-expanded'), 'false');
    // The workshop goes on without it.
    await page.uncheck('#flash-attention');
    assert.match(await readout(page), /needs 508\.6 GB/);
    // Once the module can load, the button opens Go further, on the view as it stands.
    await page.unroute('**/trainmem-full.js');
    await page.click('#open-further');
    await page.waitForSelector('#further-controls');
    await page.click('#savings summary');
    await page.waitForSelector('#savings-list li');
    assert.match(await readout(page), /needs 508\.6 GB/);
    assert.equal(await page.isVisible('#open-further'), false);
    assert.equal(asked.filter((path) => path.endsWith('/trainmem-full.js')).length, 2);
    assert.deepEqual(
      problems.filter((problem) => !/Failed to load resource/.test(problem)),
      [],
    );
    await page.close();
  });

  it('says so when the panels’ own code cannot load, and tries again on the next click', async () => {
    const { page, problems } = await harness.openPage();
    await page.route('**/explore.js', (route) => route.abort());
    await page.click('#find-fit');
    await page.waitForFunction(() =>
      /could not load/.test(document.getElementById('fit-summary').textContent),
    );
    assert.equal(
      await page.textContent('#fit-summary'),
      'The search could not load (explore.js did not load). Try again.',
    );
    // The workshop goes on without it, and a change asks nothing of the panel that was not made.
    await page.selectOption('#recompute', 'full');
    assert.match(await readout(page), /needs 131\.7 GB/);
    await page.unroute('**/explore.js');
    await page.click('#find-fit');
    await page.waitForSelector('#fit-table tbody tr');
    assert.match(await page.textContent('#fit-summary'), /at the fewest/);
    assert.deepEqual(
      problems.filter((problem) => !/Failed to load resource/.test(problem)),
      [],
    );
    await page.close();
  });

  it('starts loading the views’ code when a reader points at one, before the click', async () => {
    const { page, problems } = await harness.openPage();
    const loaded = page.waitForResponse((response) => response.url().endsWith('/explore.js'));
    await page.hover('#savings summary');
    await loaded;
    await page.waitForFunction(() => typeof globalThis.trainmemExplore === 'object');
    await page.click('#savings summary');
    await page.waitForSelector('#savings-list li');
    assert.deepEqual(problems, []);
    await page.close();
  });

  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    it(`pins a configuration beside the current one, each bar labelled by what changed (${viewport.width} px)`, async () => {
      const { page, problems } = await harness.openPage({ viewport });
      await page.click('#pin');
      const before = await canvases(page);
      await page.fill('#dp', '8');
      await page.press('#dp', 'Enter');
      await page.selectOption('#zero', '3');
      assert.equal(
        await page.textContent('#compare'),
        'Changed since pinned: Data parallelism, 1 → 8; ZeRO stage, 0 → 3. ' +
          'This configuration needs 112.4 GB less on its most loaded device than the pinned one ' +
          '(52.6 GB against 165.0 GB, on 8 devices instead of 1 device).',
      );
      assert.notEqual((await canvases(page)).breakdown, before.breakdown);
      // The sentence sits in the bar chart's own card.
      assert.equal(
        await page.evaluate(() => document.getElementById('compare').closest('figure') !== null),
        true,
      );
      // Each bar names its side of what changed, every line within its own bar's room and the chart.
      const { labels, centres, width, lines } = await page.evaluate(() => {
        const drawn = globalThis.trainmemPage.charts.breakdownLabels();
        const context = document.createElement('canvas').getContext('2d');
        context.font = `12px ${getComputedStyle(document.body).fontFamily}`;
        return {
          ...drawn,
          lines: drawn.labels.map((label) => label.map((line) => context.measureText(line).width)),
        };
      });
      assert.deepEqual(labels, [
        ['Pinned', 'Data parallelism: 1', 'ZeRO stage: 0'],
        ['Now', 'Data parallelism: 8', 'ZeRO stage: 3'],
      ]);
      const room = centres[1] - centres[0];
      lines.forEach((widths, bar) => {
        for (const lineWidth of widths) {
          assert.ok(lineWidth < room, `a line of ${lineWidth} px beside bars ${room} px apart`);
          assert.ok(centres[bar] - lineWidth / 2 >= 0 && centres[bar] + lineWidth / 2 <= width);
        }
      });
      await page.click('#unpin');
      assert.equal(await page.isVisible('#compare'), false);
      assert.deepEqual(problems, []);
      await page.close();
    });
  }
});
