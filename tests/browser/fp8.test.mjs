// FP8 training (precision fp8-mixed) in Chromium: its term shows in the readout, the breakdown's
// legend, the numbers and the arithmetic, the link keeps it, and a device without FP8 refuses it
// by the precision's control.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodyText, FORBIDDEN_TEXT, readout, startHarness, tableRows } from './harness.mjs';

describe('FP8 training, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it('adds the FP8 weights and scales to the readout, the numbers and the arithmetic', async () => {
    const { page, problems } = await harness.openPage();
    await page.click('.numbers summary');
    await page.waitForSelector('#breakdown-table tbody tr');
    const plainRows = await tableRows(page, '#breakdown-table');
    assert.equal(
      plainRows.some((row) => row[0] === 'FP8 weights and scales'),
      false,
    );
    await page.selectOption('#precision', 'fp8-mixed');
    const text = await readout(page);
    assert.match(text, /^Llama 3 8B needs 173\.6 GB to train on one device/);
    assert.match(text, /14\.0 GB of FP8 weights and scales, and 31\.1 GB of activations/);
    assert.equal(new URL(page.url()).searchParams.get('precision'), 'fp8-mixed');
    const rows = await tableRows(page, '#breakdown-table');
    assert.deepEqual(
      rows.find((row) => row[0] === 'FP8 weights and scales'),
      ['FP8 weights and scales', '—', '14.0 GB'],
    );
    await page.click('#arithmetic summary');
    await page.waitForSelector('#arithmetic-list code');
    const arithmetic = await page.textContent('#arithmetic-list');
    assert.match(arithmetic, /FP8 GEMM weights \(each FP8 weight and its transpose\)/);
    assert.match(arithmetic, /_estimate_cached_weight_size/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('refuses FP8 on an A100 by the precision control, keeping the last good view', async () => {
    const { page, problems } = await harness.openPage({ query: '?device=a100-80gb' });
    const before = await readout(page);
    await page.selectOption('#precision', 'fp8-mixed');
    assert.equal(await page.isVisible('#precision-error'), true);
    assert.match(await page.textContent('#precision-error'), /A100 80 GB has no FP8 tensor cores/);
    assert.equal(await readout(page), before);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
