// The fewest devices' results fit their box at a laptop's and a phone's width: no sideways
// scrolling, every reason shown whole, every Use button in view, and a Use button still applies
// its layout.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readout, startHarness } from './harness.mjs';

/** Where the results overrun: the box, the page, each reason's lines, each Use button. */
const overruns = (page) =>
  page.evaluate(() => {
    const table = document.getElementById('fit-table');
    const box = table.parentElement;
    const bounds = box.getBoundingClientRect();
    const inside = (rect) => rect.left >= bounds.left - 0.5 && rect.right <= bounds.right + 0.5;
    const found = [];
    if (box.scrollWidth > box.clientWidth) {
      found.push(`the box scrolls: ${box.scrollWidth} px of results in ${box.clientWidth} px`);
    }
    if (document.documentElement.scrollWidth > window.innerWidth) {
      found.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px`);
    }
    for (const row of table.tBodies[0].rows) {
      // Each line of the reason's text, as laid out, lies inside the box: none is cut off.
      const reason = row.cells[4];
      const range = document.createRange();
      range.selectNodeContents(reason);
      const lines = [...range.getClientRects()];
      if (lines.length === 0 || !lines.every(inside)) {
        found.push(`a reason runs out of the box: ${reason.textContent.slice(0, 40)}…`);
      }
      if (reason.scrollWidth > reason.clientWidth || reason.scrollHeight > reason.clientHeight) {
        found.push(`a reason is clipped in its cell: ${reason.textContent.slice(0, 40)}…`);
      }
      const use = row.querySelector('button').getBoundingClientRect();
      if (use.width === 0 || use.left < 0 || use.right > window.innerWidth || !inside(use)) {
        found.push(`a Use button is out of view: ${use.left}–${use.right} px`);
      }
    }
    return { found, rows: table.tBodies[0].rows.length };
  });

describe('the fewest devices’ results at a laptop’s and a phone’s width, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  for (const [name, viewport] of [
    ['a laptop', { width: 1366, height: 900 }],
    ['a phone', { width: 390, height: 844 }],
  ]) {
    it(`fit their box on ${name}, reasons whole and every Use button in view`, async () => {
      // Llama 3 405B: 96 devices, and the longest reasons (a pipeline, context parallelism, ZeRO-3).
      const { page, problems } = await harness.openPage({ viewport, query: '?model=llama3-405b' });
      await page.click('#find-fit');
      await page.waitForSelector('#fit-table tbody tr'); // once the on-demand module has loaded
      const { found, rows } = await overruns(page);
      assert.ok(rows > 1, `layouts were found: ${rows}`);
      assert.deepEqual(found, []);

      // A Use button further down the list still applies its layout.
      const use = page.locator('#fit-table tbody tr:nth-child(2) button');
      const layout = await page.textContent('#fit-table tbody tr:nth-child(2) th');
      assert.match(layout, /p 2 .*= 96 devices/);
      await use.click();
      assert.match(await readout(page), /= 96 devices/);
      assert.match(new URL(page.url()).search, /&pp=2&/);
      assert.deepEqual(problems, []);
      await page.close();
    });
  }

  it("names the stack's term that outweighs a layout's states and activations, as the CLI does", async () => {
    // Megatron-LM at 131,072 tokens on L4s, a global batch of 24: the peak is the data loader's
    // whole mask, before the forward pass, and the fewest devices are 1,536 (once 20,480).
    const { page, problems } = await harness.openPage({
      query: '?model=llama3-70b&seq-len=131072&tokens=131072&stack=megatron&device=l4&global-batch=24',
    });
    await page.click('#find-fit');
    await page.waitForSelector('#fit-table tbody tr');
    assert.match(await page.textContent('#fit-summary'), /fits on 1,536 × L4 24 GB at the fewest/);
    const total = await page.textContent('#fit-table tbody tr:first-child td');
    assert.match(total, /^[\d.]+ GB, of it Data loader's attention masks \(bool\) [\d.]+ GB$/);
    // Nothing overruns the box at a laptop's width, nor on a phone, whose card wraps the total.
    await page.setViewportSize({ width: 1366, height: 900 });
    assert.deepEqual((await overruns(page)).found, []);
    await page.setViewportSize({ width: 390, height: 844 });
    assert.deepEqual((await overruns(page)).found, []);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
