// Will my run fit? In Chromium: a torchtitan job config pasted (the one under docs/examples) or
// chosen becomes the workshop's setup, each change said in words, with the verdict and the runs
// its band comes from; the verdict follows the device the reader picks after; a file the core
// refuses, or one that sets what it does not understand, says so and keeps the last good view.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { bodyText, FORBIDDEN_TEXT, readout, startHarness } from './harness.mjs';

const EXAMPLE = new URL('../../docs/examples/torchtitan-llama3-8b-fsdp.toml', import.meta.url);
const MEGATRON = new URL('../../docs/examples/megatron-llama3-8b.sh', import.meta.url);
const DEEPSPEED = new URL('../../docs/examples/deepspeed-zero3.json', import.meta.url);
const LLAMA_CONFIG = new URL('../../docs/examples/llama3.1-8b-config.json', import.meta.url);
const AXOLOTL = new URL('../../docs/examples/axolotl-llama3.1-8b-qlora.yml', import.meta.url);
const ACCELERATE = new URL('../../docs/examples/accelerate-fsdp1.yaml', import.meta.url);
const TORCHTITAN_LINE = new URL('../../docs/examples/torchtitan-llama3-8b-nvfp4.sh', import.meta.url);
const TRL_GRPO = new URL('../../docs/examples/trl-grpo-qwen3-8b.yaml', import.meta.url);
const VERL = new URL('../../docs/examples/verl-grpo-qwen3-8b.sh', import.meta.url);
const TRL_DPO = new URL('../../docs/examples/trl-dpo-llama3-8b-lora.yaml', import.meta.url);

describe('the launch config', () => {
  let harness;
  before(async () => {
    harness = await startHarness();
  });
  after(async () => {
    await harness?.close();
  });

  async function openLaunch(page, text, worldSize) {
    if (!(await page.$eval('#launch-panel', (panel) => panel.open)))
      await page.click('#launch-panel summary');
    await page.fill('#launch', text);
    await page.fill('#launch-world-size', worldSize);
    await page.click('#use-launch');
  }

  it('reads a torchtitan job config into the workshop and gives its verdict with its band', async () => {
    const { page, problems } = await harness.openPage();
    await openLaunch(page, await readFile(EXAMPLE, 'utf8'), '8');
    await page.waitForSelector('#launch-result:not([hidden])');
    // Its settings became the workshop's, said in words.
    assert.equal(await page.inputValue('#stack'), 'torchtitan');
    assert.equal(await page.inputValue('#dp'), '8');
    assert.equal(await page.inputValue('#recompute'), 'full');
    const notice = await page.textContent('#url-notice');
    assert.match(notice, /^Read from the launch config: .*Stack: torchtitan \(FSDP2\)/);
    assert.match(notice, /Data parallelism: 8/);
    // The verdict, its reason, and the published runs of the stack.
    assert.match(
      await page.textContent('#launch-verdict'),
      /^Fits\. Even at the low end of the estimate's error against the \d+ published runs of the torchtitan/,
    );
    assert.ok((await page.$$('#launch-band tr')).length >= 3);
    assert.match(await page.textContent('#launch-read'), /training\.data_parallel_shard_degree -1: 8/);
    // The result is where the reader looks next: in view, and focused.
    const inView = (id) =>
      page.evaluate((element) => {
        const box = document.getElementById(element).getBoundingClientRect();
        return document.activeElement.id === element && box.top >= 0 && box.top < window.innerHeight;
      }, id);
    assert.equal(await inView('launch-result'), true);
    assert.equal(await page.isHidden('#launch-unknown'), true);
    // The verdict follows the device the reader picks: on an RTX 4090 it does not fit.
    await page.selectOption('#device', 'rtx-4090');
    await page.waitForFunction(
      () => document.getElementById('launch-verdict').dataset.verdict === 'does not fit',
    );
    assert.match(await page.textContent('#launch-verdict'), /^Does not fit\./);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('gives no verdict while the file sets a key it does not understand, and names it', async () => {
    const { page, problems } = await harness.openPage();
    const text = `${await readFile(EXAMPLE, 'utf8')}\n[memory_tricks]\nkeep_everything_twice = true\n`;
    await openLaunch(page, text, '8');
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.match(await page.textContent('#launch-unknown'), /memory_tricks\.keep_everything_twice/);
    assert.equal(await page.$eval('#launch-verdict', (line) => line.dataset.verdict), 'uncertain');
    assert.match(
      await page.textContent('#launch-verdict'),
      /^Uncertain\. Cannot tell: the launch config sets memory_tricks\.keep_everything_twice, which is not understood/,
    );
    // It stays withheld as the setup changes.
    await page.selectOption('#device', 'rtx-4090');
    await page.waitForFunction(
      () =>
        document.getElementById('launch-verdict').textContent.includes('RTX') ||
        document.getElementById('launch-verdict').textContent.includes('Cannot tell'),
    );
    assert.match(await page.textContent('#launch-verdict'), /^Uncertain\. Cannot tell/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('reads a Megatron-LM launch line: its model, layout and recipe, under the megatron stack', async () => {
    const { page, problems } = await harness.openPage();
    await openLaunch(page, await readFile(MEGATRON, 'utf8'), '');
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.equal(await page.inputValue('#stack'), 'megatron');
    assert.equal(await page.inputValue('#tp'), '2');
    assert.equal(await page.inputValue('#pp'), '2');
    assert.equal(await page.inputValue('#model'), 'custom');
    // Llama 3 8B's shape from the line, over t 2 × p 2 and d 4 (torchrun's 16 devices).
    assert.match(
      await readout(page),
      /^Spread over d 4 \(ZeRO-1 over d·c = 4\) × t 2 \(SP\) × p 2 × c 1 = 16 devices, recompute full, 32-layer model of width 4096 \(the launch line's\) needs/,
    );
    // Every flag read (--overlap-grad-reduce as its setting): nothing listed as not understood.
    assert.equal(await page.isHidden('#launch-unknown'), true);
    assert.equal(await page.isChecked('#overlap-grad-reduce'), true);
    assert.match(
      await page.textContent('#launch-verdict'),
      /^Fits\. .*published runs of the Megatron-LM stack/,
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads torchtitan's 2026 torchrun line, its NVFP4 recipe on the reader's GB200", async () => {
    const { page, problems } = await harness.openPage({ query: '?device=gb200' });
    await openLaunch(page, await readFile(TORCHTITAN_LINE, 'utf8'), '');
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.equal(await page.inputValue('#stack'), 'torchtitan');
    assert.equal(await page.inputValue('#precision'), 'nvfp4-mixed');
    assert.equal(await page.inputValue('#dp'), '4');
    assert.equal(await page.inputValue('#device'), 'gb200');
    assert.match(await readout(page), /^Spread over d 4 \(ZeRO-3 over d·c = 4\)/);
    assert.match(await page.textContent('#launch-verdict'), /^Fits\. .*torchtitan \(FSDP2\) stack/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads torchtitan's Qwen3-30B-A3B line with expert parallelism, judged by the headroom", async () => {
    const { page, problems } = await harness.openPage();
    await openLaunch(
      page,
      'torchrun --nproc_per_node 8 -m torchtitan.train --module qwen3 --config qwen3_30b_a3b ' +
        '--training.disable_cuda_graphs --training.num_tokens_per_microbatch_per_dp_rank 8192 ' +
        '--training.max_context_length 4096 --parallelism.expert_parallel_degree 8\n',
      '',
    );
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.equal(await page.inputValue('#model'), 'qwen3-30b-a3b');
    assert.equal(await page.inputValue('#stack'), 'torchtitan');
    assert.equal(await page.inputValue('#ep'), '8');
    assert.match(await page.textContent('#launch-read'), /efsdp/);
    // No published torchtitan run is a mixture: the headroom decides, and the verdict says so.
    assert.match(
      await page.textContent('#launch-verdict'),
      /^Fits\. No published run of the torchtitan \(FSDP2\) stack measures a mixture of experts yet/,
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads a DeepSpeed config over the reader's own model and tokens, which stay", async () => {
    const { page, problems } = await harness.openPage({ query: '?recompute=full' });
    // The reader's model (a config.json) and sequence length, set before the file.
    await page.fill('#config', await readFile(LLAMA_CONFIG, 'utf8'));
    await page.click('#use-config');
    await page.waitForFunction(() =>
      document.getElementById('readout').textContent.includes('LlamaForCausalLM'),
    );
    await page.fill('#seq-len', '4096');
    await page.press('#seq-len', 'Enter');
    await openLaunch(page, await readFile(DEEPSPEED, 'utf8'), '');
    await page.waitForSelector('#launch-result:not([hidden])');
    // The file's: ZeRO 3 over the 8 devices train_batch_size gives, 2 sequences a micro-batch.
    assert.equal(await page.inputValue('#stack'), 'deepspeed');
    assert.equal(await page.inputValue('#zero'), '3');
    assert.equal(await page.inputValue('#dp'), '8');
    assert.equal(await page.inputValue('#overlap-comm'), 'on');
    // The reader's: the model, the tokens and recomputation.
    assert.equal(await page.inputValue('#model'), 'custom');
    assert.equal(await page.inputValue('#seq-len'), '4096');
    assert.equal(await page.inputValue('#recompute'), 'full');
    assert.match(
      await readout(page),
      /^Spread over d 8 \(ZeRO-3 over d·c = 8\) × t 1 × p 1 × c 1 = 8 devices, recompute full, LlamaForCausalLM needs/,
    );
    assert.match(await page.textContent('#url-notice'), /^Read from the launch config: .*Stack: DeepSpeed/);
    assert.match(
      await page.textContent('#launch-read'),
      /^Read as a DeepSpeed config \(JSON, DeepSpeed edaa722\)\. The model \(LlamaForCausalLM\), the sequence \(4,096 tokens\)/,
    );
    assert.match(await page.textContent('#launch-verdict'), /^Fits\./);
    // A file the reader reads but the stack refuses (ZeRO-Offload under ZeRO 1) says why under the
    // panel, and the last good view stays.
    const shown = await readout(page);
    const offload = (await readFile(DEEPSPEED, 'utf8')).replace(
      '"stage": 3,',
      '"stage": 1, "offload_optimizer": {"device": "cpu"},',
    );
    await openLaunch(page, offload, '');
    await page.waitForSelector('#launch-error:not([hidden])');
    assert.match(
      await page.textContent('#launch-error'),
      /^The file's setup is refused as the workshop would run it: .*offload/i,
    );
    assert.equal(await readout(page), shown);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads TRL's GRPO config: vLLM colocated, GRPO's loss, the reader's sequence length kept", async () => {
    const { page, problems } = await harness.openPage({ query: '?seq-len=1024&tokens=8192' });
    await openLaunch(page, await readFile(TRL_GRPO, 'utf8'), '');
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.equal(await page.inputValue('#stack'), 'hf');
    assert.equal(await page.inputValue('#rollout'), 'vllm');
    assert.equal(await page.inputValue('#loss'), 'grpo');
    assert.equal(await page.inputValue('#completion-length'), '256');
    assert.equal(await page.inputValue('#seq-len'), '1024');
    assert.match(
      await page.textContent('#launch-verdict'),
      /^Fits\. No published run measures RL post-training/,
    );
    assert.match(await bodyText(page), /the sequence length given beside the file/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads TRL's DPO config: both sequences of each pair, the reference inside the loss", async () => {
    const { page, problems } = await harness.openPage();
    await openLaunch(page, await readFile(TRL_DPO, 'utf8'), '');
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.equal(await page.inputValue('#stack'), 'hf');
    assert.equal(await page.inputValue('#loss'), 'dpo');
    assert.equal(await page.inputValue('#seq-len'), '2048');
    assert.equal(await page.inputValue('#tokens'), '8192');
    assert.equal(await page.isChecked('#reference-model'), true);
    // The slider steps a pair at a time, and says so.
    assert.equal(await page.getAttribute('#tokens-slider', 'min'), '2');
    assert.equal(await page.getAttribute('#tokens-slider', 'step'), '2');
    assert.match(await page.textContent('#tokens-hint'), /2 to 16 of them, 2 at a time\./);
    assert.match(await page.textContent('#launch-verdict'), /^Fits\. No published run measures DPO's step/);
    const text = await readout(page);
    assert.match(
      text,
      /DPO \(TRL's DPOTrainer\): 2 pairs a micro-batch, each its chosen and its rejected sequence/,
    );
    assert.match(text, /the base, its adapters disabled/);
    // 4 sequences of 2,048 tokens over 128,256 entries, at the entropy: the policy's and the
    // reference's FP32 logits, the shifted copy and a chunk: 12.8 GB.
    assert.match(text, /12\.8 GB of logits and loss/);
    // Precomputed log-probabilities: no reference in the step.
    await page.uncheck('#reference-model');
    await page.waitForFunction(() =>
      /No reference model in the step: its log-probabilities are precomputed/.test(
        document.getElementById('readout').textContent,
      ),
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads verl's main_ppo line into verl's hybrid engine, with its phases and verdict", async () => {
    const { page, problems } = await harness.openPage();
    await openLaunch(page, await readFile(VERL, 'utf8'), '');
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.equal(await page.inputValue('#stack'), 'hf');
    assert.equal(await page.inputValue('#rl-trainer'), 'verl');
    assert.equal(await page.inputValue('#dp'), '8');
    assert.equal(await page.inputValue('#rollout-memory-utilization'), '0.6');
    assert.equal(await page.inputValue('#seq-len'), '3072');
    assert.equal(await page.isChecked('#reference-model'), true);
    assert.match(await page.textContent('#launch-verdict'), /^Fits\. /);
    assert.match(await bodyText(page), /Read as verl 1dda039b/);
    assert.match(await bodyText(page), /the weight sync [\d.]+ GB \([\d.]+ GB\), the generation/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads an axolotl config with the page's YAML parser, as the CLI reads it", async () => {
    const { page, problems } = await harness.openPage();
    await openLaunch(page, await readFile(AXOLOTL, 'utf8'), '2');
    await page.waitForSelector('#launch-result:not([hidden])');
    assert.equal(await page.inputValue('#stack'), 'hf');
    assert.equal(await page.inputValue('#model'), 'llama3.1-8b');
    assert.equal(await page.inputValue('#dp'), '2');
    assert.equal(await page.inputValue('#lora-rank'), '16');
    assert.equal(await page.inputValue('#base-weights'), 'nf4');
    assert.equal(await page.inputValue('#loss'), 'fused-linear');
    assert.equal(await page.inputValue('#optimizer'), 'adam-8bit');
    assert.match(
      await page.textContent('#launch-read'),
      /^Read as an axolotl config \(YAML, axolotl 067b021\)\./,
    );
    assert.equal(await page.isHidden('#launch-unknown'), true);
    assert.match(await page.textContent('#launch-verdict'), /^Fits\./);
    // An accelerate config: how the processes train (FSDP1 over 8), the run's LoRA staying.
    await openLaunch(page, await readFile(ACCELERATE, 'utf8'), '');
    await page.waitForFunction(() =>
      /^Read as an accelerate config/.test(document.getElementById('launch-read').textContent),
    );
    assert.equal(await page.inputValue('#dp'), '8');
    assert.equal(await page.inputValue('#zero'), '3');
    assert.equal(await page.inputValue('#lora-rank'), '16');
    assert.equal(await page.inputValue('#precision'), 'bf16');
    assert.equal(await page.isHidden('#launch-unknown'), true);
    assert.match(await page.textContent('#launch-verdict'), /^Fits\./);
    const shown = await readout(page);
    // A YAML that does not parse: its line, and the last good view kept.
    await openLaunch(page, 'base_model: meta-llama/Llama-3.1-8B\ndatasets: [a,\n', '');
    await page.waitForSelector('#launch-error:not([hidden])');
    assert.match(await page.textContent('#launch-error'), /^The YAML does not parse: line \d+, column \d+: /);
    // The refusal is brought into view and focused.
    assert.equal(await page.evaluate(() => document.activeElement.id), 'launch-error');
    assert.equal(
      await page.evaluate(
        () => document.getElementById('launch-error').getBoundingClientRect().top < window.innerHeight,
      ),
      true,
    );
    assert.equal(await readout(page), shown);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('lists what it does not understand, and refuses what it cannot model by key', async () => {
    const { page, problems } = await harness.openPage();
    const text = await readFile(EXAMPLE, 'utf8');
    await openLaunch(page, `${text}\n[novel]\nknob = 1\n`, '8');
    await page.waitForSelector('#launch-unknown:not([hidden])');
    assert.match(await page.textContent('#launch-unknown'), /not understood.*: novel\.knob\.$/);
    const shown = await readout(page);
    // A schedule it does not model: refused by its key, the last good view kept.
    await openLaunch(
      page,
      text.replace(
        'pipeline_parallel_degree = 1',
        'pipeline_parallel_degree = 1\npipeline_parallel_schedule = "ZBVZeroBubble"',
      ),
      '8',
    );
    await page.waitForSelector('#launch-error:not([hidden])');
    assert.match(
      await page.textContent('#launch-error'),
      /pipeline_parallel_schedule "ZBVZeroBubble" is not modelled/,
    );
    assert.equal(await readout(page), shown);
    // Without the world size, -1 cannot be read: said, nothing changed.
    await openLaunch(page, text, '');
    await page.waitForFunction(() =>
      /give the world size/.test(document.getElementById('launch-error').textContent),
    );
    assert.equal(await readout(page), shown);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
