// "Go further" in Chromium: the layout, recipe and device controls drive the charts and readout
// through the core, refuse what makes no sense by the control it concerns, show each term's
// arithmetic, and find the fewest devices that fit.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  bodyText,
  canvases,
  commit,
  coreEstimator,
  FORBIDDEN_TEXT,
  readout,
  startHarness,
  tableRows,
} from './harness.mjs';

describe('Go further, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it("starts from the plate's view: one device, Adam in BF16 mixed precision, an H100", async () => {
    const { page, problems } = await harness.openPage();
    const values = await page.$$eval('#further-controls input, #further-controls select', (elements) =>
      Object.fromEntries(elements.map((e) => [e.id, e.type === 'checkbox' ? e.checked : e.value])),
    );
    // Every setting the core's table places in "Go further", at its default; and the config's own.
    const { settings, settingKinds } = await coreEstimator();
    const defaults = settings
      .filter((setting) => setting.section)
      .map((setting) => [
        setting.id,
        setting.kind === settingKinds.SWITCH ? setting.defaultText === 'on' : setting.defaultText,
      ]);
    assert.deepEqual(values, {
      'config-file': '',
      'config-text-tower': false,
      ...Object.fromEntries(defaults),
    });
    assert.ok(defaults.length > 40, 'the controls come from the table');
    assert.equal(await page.isDisabled('#device-gb'), true);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("offers the core's devices, each titled with its source, and an L40S holds 48 GB", async () => {
    const { page, problems } = await harness.openPage();
    const options = await page.$$eval('#device option', (elements) =>
      elements.map((e) => ({ id: e.value, name: e.textContent, title: e.title })),
    );
    assert.equal(options.length, 17, 'sixteen devices and a custom capacity');
    assert.deepEqual(
      options.find(({ id }) => id === 'l40s'),
      { id: 'l40s', name: 'L40S 48 GB', title: 'NVIDIA L40S datasheet: 48 GB GDDR6 with ECC' },
    );
    assert.equal(options.find(({ id }) => id === 'rtx-5090').name, 'RTX 5090 32 GB');
    for (const option of options.filter(({ id }) => id !== 'custom')) {
      assert.match(option.title, /GB/, `${option.id}: its source prints its memory`);
    }
    await page.selectOption('#device', 'l40s');
    assert.equal(await page.isDisabled('#device-gb'), true, 'a listed device has its own memory');
    assert.match(await readout(page), /That is 3\.4 L40Ss' worth of memory, at 48 GB each\./);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('a layout redraws both charts for the most loaded device', async () => {
    const { page, problems } = await harness.openPage();
    const before = await canvases(page);
    await commit(page, '#dp', '8');
    await page.selectOption('#zero', '3');
    const text = await readout(page);
    assert.match(text, /^Spread over d 8 \(ZeRO-3 over d·c = 8\) × t 1 × p 1 × c 1 = 8 devices/);
    assert.match(text, /needs 52\.6 GB on its most loaded device: 16\.1 GB of model states/);
    assert.match(text, /It fits in one H100 80 GB/);
    assert.equal(await page.textContent('#breakdown-title'), 'Memory on the most loaded device');
    const after = await canvases(page);
    assert.notEqual(after.breakdown, before.breakdown);
    await page.click('.numbers summary');
    await page.waitForSelector('#breakdown-table tbody tr');
    assert.deepEqual((await tableRows(page, '#breakdown-table'))[0], ['Weights', '2', '2.0 GB']);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('answers the pipeline stage asked for, judges the fit on the most loaded, and bounds the batch', async () => {
    const { page, problems } = await harness.openPage();
    await commit(page, '#pp', '4');
    await commit(page, '#stage', '-1');
    let text = await readout(page);
    assert.match(text, /needs 45\.5 GB on the pipeline stage asked for \(4 of 4\): 36\.3 GB of model states/);
    assert.match(text, /Its most loaded device does not fit in one H100 80 GB with 10% kept free/);
    assert.match(
      text,
      /These figures are of the last pipeline stage \(4 of 4\), as asked; the most loaded device, on the first pipeline stage \(1 of 4\), holds 72\.8 GB, and decides whether the run fits\./,
    );
    assert.equal(await page.textContent('#breakdown-title'), "Memory on pipeline stage 4's device");
    // A stage the pipeline does not have is held pending, the view kept.
    await commit(page, '#stage', '7');
    assert.match(
      await page.textContent('#stage-error'),
      /^Not applied yet: Pipeline stage 7 is beyond p 4's stages/,
    );
    assert.equal(await readout(page), text);
    // The most loaded again, with two micro-batches a step: the first stage holds two, not four.
    await commit(page, '#stage', '0');
    await commit(page, '#global-batch', '2');
    text = await readout(page);
    assert.match(text, /needs 54\.6 GB on its most loaded device/);
    assert.match(text, /It fits in one H100 80 GB/);
    assert.equal(await page.textContent('#breakdown-title'), 'Memory on the most loaded device');
    await commit(page, '#global-batch', '-2');
    assert.match(
      await page.textContent('#global-batch-error'),
      /^Global batch must be a whole number of sequences from 0 \(a full pipeline\)/,
    );
    assert.equal(await readout(page), text);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('refuses a layout that makes no sense, by its control, and keeps the last good view', async () => {
    const { page, problems } = await harness.openPage();
    const goodText = await readout(page);
    const goodCharts = await canvases(page);
    const cases = [
      // A valid number the setup refuses is held pending, with why; one that cannot be read is refused.
      ['#tp', '3', 'tp', /^Not applied yet: Tensor parallelism 3 must divide the 32 attention heads/],
      [
        '#pp',
        '5',
        'pp',
        /^Not applied yet: Pipeline parallelism 5 must divide the 32 layers of Llama 3 8B, or set the first and last pipeline stages' layers so that the stages between split the rest evenly\. It applies/,
      ],
      [
        '#pp-first-layers',
        '3',
        'pp-first-layers',
        /^Not applied yet: The first pipeline stage's layers split a pipeline; they need pipeline parallelism above 1, or 0 for one stage\. It applies/,
      ],
      ['#dp', 'abc', 'dp', /^Data parallelism must be a whole number from 1 to 65,536\.$/],
      ['#cp', '1e400', 'cp', /^Context parallelism must be a whole number from 1 to 65,536\.$/],
      ['#seq-len', '-1', 'seq-len', /^Sequence length must be a whole number of tokens/],
    ];
    for (const [selector, text, field, message] of cases) {
      await commit(page, selector, text);
      assert.equal(await page.isVisible(`#${field}-error`), true, `${field}: message shown`);
      assert.match(await page.textContent(`#${field}-error`), message);
      assert.equal(await page.getAttribute(`#${field}`, 'aria-invalid'), 'true');
      assert.equal(await readout(page), goodText, `${field}: readout kept`);
      assert.deepEqual(await canvases(page), goodCharts, `${field}: charts kept`);
    }
    await page.selectOption('#zero', '1');
    assert.match(await page.textContent('#zero-error'), /needs data or context parallelism above 1/);
    await page.check('#sequence-parallel');
    assert.match(await page.textContent('#sequence-parallel-error'), /needs tensor parallelism above 1/);
    await page.selectOption('#device', 'custom');
    assert.equal(await page.isDisabled('#device-gb'), false, 'a custom device takes its memory');
    const customText = await readout(page);
    await commit(page, '#device-gb', '0');
    assert.match(await page.textContent('#device-gb-error'), /more than 0 GB and at most 100,000 GB/);
    assert.equal(await readout(page), customText);
    await commit(page, '#device-gb', '40');
    assert.match(await readout(page), /Custom 40 GB|at 40 GB each/);
    // A good value clears its refusal; the choices held pending still say why, until changed back.
    const shown = () => page.$$eval('.error:not([hidden])', (boxes) => boxes.map((box) => box.id).sort());
    assert.deepEqual(await shown(), [
      'pp-error',
      'pp-first-layers-error',
      'sequence-parallel-error',
      'tp-error',
      'zero-error',
    ]);
    await commit(page, '#tp', '1');
    await commit(page, '#pp', '1');
    await commit(page, '#pp-first-layers', '0');
    await page.selectOption('#zero', '0');
    await page.uncheck('#sequence-parallel');
    assert.deepEqual(await shown(), []);
    assert.equal(await page.isVisible('#stale-note'), false);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("splits a pipeline unevenly from the first and last stages' layers, as Megatron-LM does", async () => {
    const { page, problems } = await harness.openPage();
    await commit(page, '#pp', '4');
    const even = await readout(page);
    await commit(page, '#pp-first-layers', '5');
    // 27 layers left for 3 stages: 9 each, the last among them.
    assert.equal(await page.isVisible('.error:not([hidden])'), false);
    // Held by the control the reader changed, with why, until a split that works.
    await commit(page, '#pp-last-layers', '8');
    assert.match(
      await page.textContent('#pp-last-layers-error'),
      /^Not applied yet: The first and last pipeline stages' layers \(5 and 8\) leave 19 of the 32 layers of Llama 3 8B to 2 stages/,
    );
    await commit(page, '#pp-last-layers', '9');
    assert.equal(await page.isVisible('.error:not([hidden])'), false, 'a good split clears the message');
    assert.notEqual(await readout(page), even);
    assert.match(new URL(page.url()).search, /&pp-first-layers=5&pp-last-layers=9&/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("shows each term's arithmetic with this configuration's numbers", async () => {
    const { page, problems } = await harness.openPage();
    await page.click('#arithmetic summary');
    await page.waitForSelector('#arithmetic-list code');
    const formulas = await page.$$eval('#arithmetic-list code', (codes) => codes.map((c) => c.textContent));
    assert.deepEqual(formulas, [
      '2 B × 8,030,261,248 parameters = 16.1 GB',
      '2 B × 8,030,261,248 parameters = 16.1 GB',
      '4 B × 8,030,261,248 parameters = 32.1 GB',
      '8 B × 8,030,261,248 parameters = 64.2 GB',
      '32 layers × 8,192 tokens × 4,096 h × (34 + 0 (FlashAttention: no scores)) B = 36.5 GB',
    ]);
    await page.check('#logits');
    assert.match(
      await page.textContent('#arithmetic-list'),
      /6 B × 8,192 tokens × 128,256 vocabulary = 6\.3 GB/,
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('finds the fewest devices that fit, says why fewer cannot, and applies a layout', async () => {
    const { page, problems } = await harness.openPage();
    await page.click('#find-fit');
    await page.waitForSelector('#fit-table tbody tr'); // once the on-demand module has loaded
    const summary = await page.textContent('#fit-summary');
    assert.match(summary, /fits on 2 × H100 80 GB at the fewest/);
    assert.match(
      summary,
      /With fewer than 2 devices nothing fits: the leanest layout, on 1 device, still needs/,
    );
    const rows = await tableRows(page, '#fit-table');
    assert.ok(rows.length > 0);
    for (const row of rows) assert.match(row[0], /= 2 devices/);
    await page.click('#fit-table tbody tr:first-child button');
    assert.match(await readout(page), /= 2 devices.*It fits in one H100 80 GB/);
    // The readout it changed comes into view.
    assert.ok(
      await page.evaluate(() => {
        const box = document.getElementById('readout').getBoundingClientRect();
        return box.top >= 0 && box.bottom <= window.innerHeight;
      }),
    );
    assert.equal(await page.isVisible('#fit-stale'), false, 'a layout it found keeps the list current');
    // A change the search kept (the model) leaves the list, marked with what it was found for.
    await page.selectOption('#model', 'llama3-70b');
    assert.equal(await page.isVisible('#fit-table'), true, 'the list stays to compare');
    assert.equal(
      await page.textContent('#fit-stale'),
      'These layouts were found for Llama 3 8B at 8,192 tokens per micro-batch on H100 80 GB, and the ' +
        'settings have changed since: search again for the current ones.',
    );
    await page.selectOption('#model', 'llama3-8b');
    assert.equal(await page.isVisible('#fit-stale'), false);
    await page.click('#reset-further');
    assert.match(await readout(page), /^Llama 3 8B needs 165\.0 GB to train on one device/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('a new sequence length keeps the tokens per micro-batch when it can, and says so when not', async () => {
    const { page, problems } = await harness.openPage();
    await commit(page, '#seq-len', '4096');
    assert.equal(await page.inputValue('#tokens'), '8192');
    assert.match(await readout(page), /8,192 tokens per micro-batch \(2 sequences\)/);
    assert.equal(
      await page.textContent('#url-notice'),
      'Tokens per micro-batch stays 8,192: 2 sequences of 4,096 tokens.',
    );
    // 8,192 tokens are no whole number of 16,384-token sequences: the micro-batch keeps its two.
    await commit(page, '#seq-len', '16384');
    assert.equal(await page.inputValue('#tokens'), '32768');
    assert.equal(
      await page.textContent('#url-notice'),
      'Tokens per micro-batch is now 32,768, not 8,192: Tokens per micro-batch must be a whole multiple ' +
        'of 16,384 (one sequence), from 16,384 to 262,144.',
    );
    await commit(page, '#seq-len', '4096');
    await commit(page, '#tokens', '4,096');
    assert.equal(await page.inputValue('#tokens'), '4096', 'a number written with separators is read');
    assert.equal(await page.textContent('#tokens-hint'), 'Whole sequences of 4,096 tokens, 1 to 16 of them.');
    await commit(page, '#tokens', '12288');
    assert.match(await readout(page), /12,288 tokens per micro-batch \(3 sequences\)/);
    await commit(page, '#tokens', '8192.5');
    assert.match(await page.textContent('#tokens-error'), /whole multiple of 4,096/);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
