// "Training stack" under "Go further", in Chromium: a framework's holdings, the allocated and
// reserved peaks, the arithmetic and the timeline follow the core; a stack the layout does not
// suit is refused by its control, keeping the last good view.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodyText, commit, FORBIDDEN_TEXT, readout, startHarness, tableRows } from './harness.mjs';

// torchtitan's December 2024 benchmark, Table 2's first row: Llama 3.1 8B on 8 H100s of 96 GB.
const TABLE_2 =
  '?dp=8&zero=3&seq-len=32768&recompute=full&logits=on&loss=fp32-upcast&device=custom&device-gb=96' +
  '&stack=torchtitan';

describe('Training stack, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it('a link with the torchtitan stack shows both peaks and what the stack holds', async () => {
    const { page, problems } = await harness.openPage({ query: TABLE_2 });
    assert.equal(await page.inputValue('#stack'), 'torchtitan');
    assert.equal(await page.isVisible('#stack-readout'), true);
    const stack = await page.textContent('#stack-readout');
    assert.match(stack, /^Peak allocated 73\.6 GB, peak reserved 91\.5 GB/);
    assert.match(stack, /Root module, unsharded \(BF16\) 2\.1 GB/);
    assert.match(stack, /CUDA context 0\.4 GB \(outside the allocator\)/);
    assert.match(await readout(page), /needs 92\.1 GB on its most loaded device/);
    // Under one device's worth yet refused by the headroom: the readout says which.
    assert.match(await readout(page), /needs 0\.96 times its memory, more than the 86\.4 GB left usable\./);
    await page.click('.numbers summary');
    await page.waitForSelector('#breakdown-table tbody tr');
    const rows = (await tableRows(page, '#breakdown-table')).map((row) => row[0]);
    for (const term of ['Framework buffers', 'Runtime', "Allocator's cache"]) {
      assert.ok(rows.includes(term), rows.join(' | '));
    }
    await page.click('#arithmetic summary');
    await page.waitForSelector('#arithmetic-list code');
    const arithmetic = await page.textContent('#arithmetic-list');
    assert.match(arithmetic, /Root module, unsharded/);
    assert.match(arithmetic, /_fsdp_state\.py/);
    assert.match(arithmetic, /reserved peak 91\.5 GB − allocated peak 73\.6 GB/);
    await page.click('#timeline summary');
    await page.waitForFunction(() => document.getElementById('timeline-summary').textContent !== '');
    assert.match(
      await page.textContent('#timeline-summary'),
      /^Allocated peak: 74\.2 GB at loss, layer 32.*reserves in the step, 92\.1 GB, is the estimate's total\. With expandable segments it would reserve \d+\.\d GB \(the dotted line\)\.$/,
    );
    // Turned on, the step's own line is the expandable one, and the other is without them.
    await page.check('#expandable-segments');
    await page.waitForFunction(() =>
      /Without expandable segments it would reserve 92\.1 GB/.test(
        document.getElementById('timeline-summary').textContent,
      ),
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("a step that peaks at the optimiser's step says so, not 0.0 GB of activations", async () => {
    // Mistral 7B trained whole in BF16 by transformers' Trainer, 2,048 tokens under full
    // recomputation: AdamW's foreach step outweighs the passes.
    const { page, problems } = await harness.openPage({
      query: '?model=mistral-7b&stack=hf&precision=bf16&seq-len=2048&recompute=full',
    });
    const text = await readout(page);
    assert.match(
      text,
      /none of its activations at the step's peak, the optimiser's step, after the backward pass/,
    );
    assert.doesNotMatch(text, /0\.0 GB of activations/);
    // With the logits counted, they are named too.
    await page.goto(`${page.url()}&logits=on&loss=fp32-upcast`);
    await page.waitForFunction(() =>
      /activations or logits/.test(document.getElementById('readout').textContent),
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("torchtitan's chunked loss is a choice under its stack, and refused under another by its control", async () => {
    const { page, problems } = await harness.openPage({ query: `${TABLE_2}&loss=chunked-wrapper` });
    assert.equal(await page.inputValue('#loss'), 'chunked-wrapper');
    assert.match(await readout(page), /needs \d+\.\d GB on its most loaded device/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("a hybrid trains under transformers' stack, and another stack is refused keeping the view", async () => {
    // LFM2 1.2B by transformers' Trainer: its short-convolution layers on causal-conv1d.
    const { page, problems } = await harness.openPage({
      query: '?model=lfm2-1.2b&stack=hf&precision=bf16&seq-len=4096',
    });
    assert.equal(await page.isVisible('#stack-readout'), true);
    assert.match(
      await page.textContent('#stack-readout'),
      /^Peak allocated \d+\.\d GB, peak reserved \d+\.\d GB/,
    );
    const before = await readout(page);
    assert.match(before, /LFM2's short convolutions are counted on causal-conv1d, which transformers runs/);
    assert.match(before, /10 are short-convolution layers/);
    await page.selectOption('#stack', 'megatron');
    await page.waitForFunction(() => /Not applied yet/.test(document.body.innerText));
    assert.match(
      await bodyText(page),
      /Megatron-LM's run of them is not modelled yet\. Choose the ideal, hf or deepspeed stack\./,
    );
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("under transformers' stack the readout names the MTP modules it leaves out, offering no tick it refuses", async () => {
    const { page, problems } = await harness.openPage({
      query: '?model=qwen3.5-27b&stack=hf&precision=bf16&seq-len=4096',
    });
    const text = await readout(page);
    assert.match(
      text,
      /Not trained: Qwen3\.5 27B \(text\)'s multi-token-prediction modules \([\d.]+ M parameters\), which transformers does not build\./,
    );
    assert.doesNotMatch(text, /tick "Multi-token prediction"/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('the ideal stack keeps the plate and hides the peaks line', async () => {
    const { page, problems } = await harness.openPage();
    assert.equal(await page.inputValue('#stack'), 'ideal');
    assert.equal(await page.isHidden('#stack-readout'), true);
    assert.match(await readout(page), /^Llama 3 8B needs 165\.0 GB to train on one device/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('under a stack the readout ends with the verdict, as the CLI does, from the settings alone', async () => {
    const { page, problems } = await harness.openPage();
    assert.equal(await page.isHidden('#stack-verdict'), true);
    await page.selectOption('#stack', 'megatron');
    await page.waitForSelector('#stack-verdict:not([hidden])');
    // Llama 3 8B whole on one H100: even the band's low end is over its 80 GB.
    assert.match(
      await page.textContent('#stack-verdict'),
      /^Verdict: Does not fit\. Even at the high end of the estimate's error against the \d+ published runs of the Megatron-LM stack/,
    );
    await page.selectOption('#stack', 'ideal');
    await page.waitForSelector('#stack-verdict', { state: 'hidden' });
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('a stack brings its own precision where the reader never chose one, and says so', async () => {
    const { page, problems } = await harness.openPage();
    await page.selectOption('#stack', 'torchtune');
    await page.waitForFunction(() => document.getElementById('precision').value === 'bf16');
    assert.match(
      await page.textContent('#url-notice'),
      /The torchtune stack brings: Precision: Pure BF16\. Set them to choose otherwise\./,
    );
    assert.equal(await page.isVisible('#stack-error'), false);
    // A precision the reader chose is theirs: the stack refuses it, by its control.
    await page.selectOption('#stack', 'ideal');
    await page.selectOption('#precision', 'bf16-mixed');
    await page.selectOption('#stack', 'torchtune');
    assert.equal(await page.inputValue('#precision'), 'bf16-mixed');
    const refusals = await page.$$eval('#stack-error, #precision-error', (lines) =>
      lines.filter((line) => !line.hidden).map((line) => line.textContent),
    );
    assert.match(refusals.join(' '), /bf16 precision/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("counts Megatron-LM's flex dispatcher and DeepEP's buffer outside the allocator, and refuses it without expert parallelism", async () => {
    const { page, problems } = await harness.openPage({
      query: '?model=qwen3-30b-a3b&stack=megatron&dp=8&ep=8&moe-dispatcher=flex&logits=on',
    });
    assert.equal(await page.inputValue('#moe-dispatcher'), 'flex');
    assert.match(
      await page.textContent('#stack-readout'),
      /DeepEP's buffer 0\.2 GB \(outside the allocator\)/,
    );
    const before = await readout(page);
    await commit(page, '#ep', '1');
    await page.waitForFunction(() =>
      /The flex dispatcher needs expert parallelism/.test(
        [...document.querySelectorAll('.error')].map((element) => element.textContent).join(' '),
      ),
    );
    assert.equal(await readout(page), before);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('refuses torchtitan on one device by its control, keeping the last good view', async () => {
    const { page, problems } = await harness.openPage();
    const before = await readout(page);
    await page.selectOption('#stack', 'torchtitan');
    assert.equal(await page.isVisible('#stack-error'), true);
    assert.match(await page.textContent('#stack-error'), /FSDP2/);
    assert.equal(await page.isVisible('#stale-note'), true);
    assert.equal(await readout(page), before);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
