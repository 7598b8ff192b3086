// "Fine-tuning" under "Go further", in Chromium: LoRA, a quantised base and offloading drive the
// readout through the core, live in the link under their own keys, refuse what makes no sense by
// the control it concerns, and show the host's memory beside the device's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodyText, commit, FORBIDDEN_TEXT, readout, startHarness, tableRows } from './harness.mjs';

describe('Fine-tuning, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it("is a group of 'Go further' whose defaults train every parameter on the device", async () => {
    const { page, problems } = await harness.openPage();
    const legends = await page.$$eval('#further legend', (list) => list.map((legend) => legend.textContent));
    assert.ok(legends.includes('Fine-tuning'), legends.join(' | '));
    const values = await page.$$eval(
      '#lora-rank, #lora-targets, #base-weights, #offload, #offload-activations',
      (elements) =>
        Object.fromEntries(elements.map((e) => [e.id, e.type === 'checkbox' ? e.checked : e.value])),
    );
    assert.deepEqual(values, {
      'lora-rank': '0',
      'lora-targets': 'attention',
      'base-weights': 'bf16',
      offload: 'none',
      'offload-activations': false,
    });
    assert.equal(await page.isHidden('#host-readout'), true);
    assert.match(await readout(page), /^Llama 3 8B needs 165\.0 GB to train on one device/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('a way in at the top of Go further: a link to the group, and QLoRA on a 24 GB GPU in one click', async () => {
    const { page, problems } = await harness.openPage();
    // The link reaches the group without reading Go further top to bottom.
    assert.equal(await page.getAttribute('#fine-tuning-way-in a', 'href'), '#fine-tuning');
    assert.equal(await page.$eval('#fine-tuning legend', (legend) => legend.textContent), 'Fine-tuning');
    await page.click('#try-qlora');
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('LoRA'));
    const values = await page.$$eval(
      '#device, #lora-rank, #lora-targets, #base-weights, #recompute',
      (elements) => Object.fromEntries(elements.map((e) => [e.id, e.value])),
    );
    assert.deepEqual(values, {
      device: 'rtx-4090',
      'lora-rank': '16',
      'lora-targets': 'all-linear',
      'base-weights': 'nf4',
      recompute: 'full',
    });
    // Every setting it changed is said, and the logits it brought in too.
    assert.match(
      await page.textContent('#url-notice'),
      /^Set for fine-tuning with QLoRA: Device: RTX 4090 24 GB; LoRA rank: 16; LoRA targets: All linear layers; Base weights: NF4 \(QLoRA\); Recomputation: Full\. .*The logits and the loss now count/,
    );
    // The consumer GPU's 24 GB is the capacity the readout and the charts measure against.
    assert.match(
      await readout(page),
      /^Llama 3 8B needs 21\.2 GB to train on one device: .*0\.9 RTX 4090s' worth of memory, at 24 GB each\.$/,
    );
    assert.equal(await page.evaluate(() => document.activeElement.id), 'fine-tuning');
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('lora-rank'), '16');
    assert.equal(url.searchParams.get('device'), 'rtx-4090');
    // The reader set them: Back to the plate's view puts them back.
    await page.click('#reset-further');
    assert.match(await readout(page), /^Llama 3 8B needs 165\.0 GB to train on one device/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("torchtune's optimizer in backward holds the largest parameter's gradient, said in the readout", async () => {
    const { page, problems } = await harness.openPage({ query: '?precision=bf16' });
    await page.check('#optimizer-in-backward');
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('largest one'));
    assert.match(
      await readout(page),
      /\(6 bytes × 8\.03 B parameters and the largest one's gradient, 1\.1 GB, stepped in the backward pass\)/,
    );
    assert.equal(new URL(page.url()).searchParams.get('optimizer-in-backward'), 'on');
    // Two devices: held pending by the control the reader changed, saying why; the view kept.
    const before = await readout(page);
    await commit(page, '#dp', '2');
    await page.waitForFunction(() => document.getElementById('dp-error').textContent !== '');
    assert.match(await page.textContent('#dp-error'), /^Not applied yet: .*single-device full training/);
    assert.equal(await readout(page), before);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('LoRA counts the trainable parameters, and the link keeps the rank and targets', async () => {
    const { page, problems } = await harness.openPage();
    await commit(page, '#lora-rank', '16');
    // Leaving the plate's view for fine-tuning counts the logits as the run computes them, in words.
    assert.match(
      await page.textContent('#url-notice'),
      /^The logits and the loss now count, as this run computes them \(FP32 upcast, unfused\): the total is [\d.]+ GB, 12\.6 GB more\./,
    );
    assert.equal(await page.isChecked('#logits'), true);
    assert.equal(await page.inputValue('#loss'), 'fp32-upcast');
    await page.selectOption('#lora-targets', 'all-linear');
    assert.match(await readout(page), /^Llama 3 8B needs 65\.9 GB to train on one device/);
    // Unticked, they stay out: the reader's choice.
    await page.uncheck('#logits');
    await commit(page, '#lora-rank', '32');
    await commit(page, '#lora-rank', '16');
    assert.equal(await page.isChecked('#logits'), false);
    const text = await readout(page);
    assert.match(text, /^Llama 3 8B needs 53\.3 GB to train on one device/);
    assert.match(text, /Not counted: the output layer's logits and loss, 12\.6 GB more/);
    assert.match(text, /a frozen base of 8\.03 B parameters, 41,943,040 of LoRA's trainable/);
    const query = new URL(page.url()).searchParams;
    assert.equal(query.get('lora-rank'), '16');
    assert.equal(query.get('lora-targets'), 'all-linear');
    await page.click('.numbers summary');
    await page.waitForSelector('#breakdown-table tbody tr');
    const rows = await tableRows(page, '#breakdown-table');
    assert.deepEqual(rows[0], ['Weights', '2 frozen linear, 2 adapters', '16.1 GB']);
    assert.deepEqual(rows[1], ['Gradients', '2 per adapter parameter', '0.1 GB']);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('a link with QLoRA and offloading shows the host memory beside the device', async () => {
    const { page, problems } = await harness.openPage({
      query: '?lora-rank=16&base-weights=nf4&offload=optimizer&offload-activations=on',
    });
    assert.equal(await page.inputValue('#base-weights'), 'nf4');
    assert.equal(await page.inputValue('#offload'), 'optimizer');
    assert.equal(await page.isChecked('#offload-activations'), true);
    assert.match(
      await readout(page),
      /^Llama 3 8B needs 8\.2 GB to train on one device: 5\.8 GB of model states \(a frozen base of 8\.03 B parameters, 13,631,488 of LoRA's trainable\), 0\.1 GB for the layer being dequantised, and/,
    );
    assert.equal(await page.isVisible('#host-readout'), true);
    const host = await page.textContent('#host-readout');
    assert.match(host, /^Host memory: 34\.5 GB beside the device's 8\.2 GB\./);
    assert.match(host, /34\.3 GB of activations/);
    assert.match(host, /FP32 gradients of its own/);
    assert.doesNotMatch(host, /holds it/); // no host memory given: not checked
    // Given the host's memory, the readout answers for it: one device's 34.5 GB, within 32 GB? No.
    await page.fill('#host-gb', '32');
    await page.press('#host-gb', 'Enter');
    await page.waitForFunction(() => document.getElementById('host-readout').textContent.includes('host'));
    assert.match(
      await page.textContent('#host-readout'),
      /Its node's 1 device needs 34\.5 GB of the host's 32\.0 GB: the host does not hold it\./,
    );
    await page.click('.numbers summary');
    await page.waitForSelector('#breakdown-table tbody tr');
    const rows = await tableRows(page, '#breakdown-table');
    assert.deepEqual(rows.at(-1), ['Host memory (offloaded, and its FP32 gradients)', '—', '34.5 GB']);
    assert.ok(rows.some((row) => row[0] === 'Dequantised layer (BF16)'));
    // The arithmetic writes the host's terms with their source.
    await page.click('#arithmetic summary');
    await page.waitForSelector('#arithmetic-list code');
    const arithmetic = await page.textContent('#arithmetic-list');
    assert.match(arithmetic, /Host memory/);
    assert.match(arithmetic, /ZeRO-Offload/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('refuses a quantised base without LoRA by its control, keeping the last good view', async () => {
    const { page, problems } = await harness.openPage();
    const before = await readout(page);
    await page.selectOption('#base-weights', 'nf4');
    assert.equal(await page.isVisible('#base-weights-error'), true);
    assert.match(await page.textContent('#base-weights-error'), /need LoRA/);
    assert.equal(await page.isVisible('#stale-note'), true);
    assert.equal(await readout(page), before);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
