// A page for every reader: axe-core finds no violation on any view, every control is reachable
// by keyboard with a visible focus, and the charts' numbers are also in real text.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import AxeBuilder from '@axe-core/playwright';
import { startHarness } from './harness.mjs';

async function violations(page) {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations.map(
    (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
  );
}

describe('accessibility, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it('axe-core reports no violation on the default view', async () => {
    const { page } = await harness.openPage();
    assert.deepEqual(await violations(page), []);
    await page.close();
  });

  it('axe-core reports no violation with every panel open, a configuration pinned, an error shown', async () => {
    // The Llama block's model, so that the arithmetic shows its table of saved tensors too.
    const { page } = await harness.openPage({ query: '?activations=llama-block' });
    await page.click('.numbers summary');
    await page.click('#arithmetic summary');
    await page.waitForSelector('#arithmetic-list code');
    await page.waitForSelector('#saved-tensors-table tbody tr');
    await page.click('#measured summary');
    await page.waitForSelector('#measured-table tbody tr');
    await page.click('#find-fit');
    await page.click('#embed-this summary');
    await page.click('#timeline summary');
    await page.click('#savings summary');
    await page.click('#where-it-fits summary');
    await page.click('#pin');
    await page.waitForSelector('#fit-map tbody tr');
    await page.waitForSelector('#savings-list li');
    await page.waitForSelector('#fit-table tbody tr');
    await page.waitForFunction(() => document.getElementById('timeline-summary').textContent !== '');
    await page.fill('#tp', '3');
    await page.press('#tp', 'Enter');
    assert.equal(await page.isVisible('#tp-error'), true);
    assert.deepEqual(await violations(page), []);
    await page.close();
  });

  it('axe-core reports no violation embedded, or at a phone width', async () => {
    const embedded = await harness.openPage({ query: '?embed=1' });
    assert.deepEqual(await violations(embedded.page), []);
    await embedded.page.close();
    const phone = await harness.openPage({ viewport: { width: 390, height: 844 } });
    // The fewest devices as cards, and the embed snippet, at a phone's width.
    await phone.page.click('#embed-this summary');
    await phone.page.click('#find-fit');
    await phone.page.waitForSelector('#fit-table tbody tr');
    assert.deepEqual(await violations(phone.page), []);
    await phone.page.close();
  });

  it('reaches every control by keyboard, each with a visible focus', async () => {
    const { page } = await harness.openPage();
    const controls = await page.$$eval('select, input, button, summary', (elements) =>
      elements
        // Shown: not in a closed <details> either ("Embed this" holds buttons).
        .filter((element) => element.offsetParent !== null && element.checkVisibility() && !element.disabled)
        .map((e) => e.id || e.textContent.trim()),
    );
    const reached = new Set();
    for (let press = 0; press < controls.length + 10; press += 1) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate(() => {
        const element = document.activeElement;
        if (element === document.body) return { name: '' };
        const style = getComputedStyle(element);
        return {
          name: element.id || element.textContent.trim(),
          outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
        };
      });
      if (focused.name) {
        reached.add(focused.name);
        assert.ok(focused.outline, `focus on ${focused.name} is visible`);
      }
    }
    const unreached = controls.filter((name) => !reached.has(name));
    assert.deepEqual(unreached, []);
    // And used by keyboard: the slider moves with the arrow keys.
    await page.focus('#tokens-slider');
    await page.keyboard.press('ArrowRight');
    assert.match(await page.textContent('#readout'), /16,384 tokens per micro-batch/);
    await page.close();
  });
});
