// "RL post-training" under "Go further", in Chromium: vLLM colocated with TRL's GRPOTrainer is held
// beside the trainer's step, its KV cache and the utilizations the run works between are said in
// words, and what the engine cannot be is refused by its control, keeping the last good view.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodyText, commit, FORBIDDEN_TEXT, readout, startHarness } from './harness.mjs';

// Qwen3-8B with LoRA r 16 on a BF16 base, on one H100 under the hf stack: 8 sequences of 1,024
// tokens, full recomputation, vLLM colocated at TRL's 0.3.
const GRPO =
  '?model=qwen3-8b&stack=hf&precision=bf16&lora-rank=16&recompute=full&seq-len=1024&tokens=8192' +
  '&rollout=vllm';

// Qwen3-8B trained whole over 8 H100s under FSDP1 by verl, 4 sequences of 3,072 tokens a device,
// vLLM colocated, the logits counted.
const VERL =
  '?model=qwen3-8b&stack=hf&dp=8&zero=3&recompute=full&seq-len=3072&tokens=12288&logits=on' +
  '&loss=grpo&rollout=vllm&rl-trainer=verl';

describe('RL post-training, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it('a GRPO link holds vLLM beside the trainer and says its KV cache and utilizations', async () => {
    const { page, problems } = await harness.openPage({ query: GRPO });
    assert.equal(await page.inputValue('#rollout'), 'vllm');
    assert.equal(await page.inputValue('#rollout-memory-utilization'), '0.3');
    const text = await readout(page);
    assert.match(text, /vLLM, colocated at gpu_memory_utilization 0\.3, takes 25\.5 GB of each device/);
    assert.match(text, /a KV cache of at most 61,724 tokens \(147,456 B a token/);
    assert.match(text, /A generation of 8 sequences of 1,024 tokens needs 8,192 tokens: it holds them\./);
    assert.match(text, /The largest gpu_memory_utilization that leaves the trainer room is 0\.\d\d\./);
    assert.match(
      await page.textContent('#stack-readout'),
      /vLLM rollout engine, colocated \(weights and KV cache\) 25\.5 GB/,
    );
    await page.waitForFunction(() =>
      /No published run measures RL post-training with a colocated/.test(document.body.innerText),
    );
    // More of the device to vLLM: its KV cache grows, and at 0.9 the trainer no longer fits.
    await commit(page, '#rollout-memory-utilization', '0.9');
    await page.waitForFunction(() =>
      /gpu_memory_utilization 0\.9/.test(document.getElementById('readout').textContent),
    );
    // The verdict follows from the JSON module, a moment later.
    await page.waitForFunction(() => /Verdict: Does not fit\./.test(document.body.innerText));
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("counts GRPO's loss over the last completion tokens, and the engine's trainer no other", async () => {
    const { page, problems } = await harness.openPage({ query: `${GRPO}&logits=on&loss=grpo` });
    const text = await readout(page);
    assert.match(text, /its loss over their last 512 tokens \(TRL's max_completion_length\)/);
    // B 8, C 512, V 151,936, at the in-place divide: 8·8·513·V + 8·8·512·V = 10.0 GB.
    assert.match(text, /10\.0 GB of logits and loss/);
    await commit(page, '#completion-length', '128');
    await page.waitForFunction(() =>
      /its loss over their last 128 tokens/.test(document.getElementById('readout').textContent),
    );
    const shorter = await readout(page);
    // Half the completion's logits: the loss is no longer the step's peak, and the total falls.
    const needs = (readout) => Number(/needs ([\d.]+) GB/.exec(readout)[1]);
    assert.ok(needs(shorter) < needs(text));
    // The completion must leave the prompt a token: refused by its control, the view kept.
    await commit(page, '#completion-length', '1024');
    assert.equal(await page.isVisible('#completion-length-error'), true);
    assert.match(await page.textContent('#completion-length-error'), /below the sequence length/);
    assert.equal(await readout(page), shorter);
    await commit(page, '#completion-length', '128');
    await page.waitForFunction(() => !document.getElementById('completion-length-error').checkVisibility());
    // With beta above 0, the reference's log-probabilities: under LoRA the adapters disabled.
    await page.check('#reference-model');
    await page.waitForFunction(() =>
      /the reference model's log-probabilities follow the policy's, the same pass with the adapters disabled/.test(
        document.getElementById('readout').textContent,
      ),
    );
    await page.uncheck('#reference-model');
    await page.waitForFunction(() =>
      /With beta 0, TRL's default, there is no reference model/.test(
        document.getElementById('readout').textContent,
      ),
    );
    // The engine's trainer runs GRPO's loss alone.
    await page.selectOption('#loss', 'fp32-upcast');
    assert.equal(await page.isVisible('#loss-error'), true);
    assert.match(await page.textContent('#loss-error'), /TRL's GRPOTrainer computes its own loss/);
    assert.equal(await readout(page), shorter);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("brings GRPO's loss with the engine where the reader chose no loss, and says so", async () => {
    const { page, problems } = await harness.openPage();
    await page.selectOption('#stack', 'hf');
    await page.selectOption('#rollout', 'vllm');
    await page.check('#logits');
    await page.waitForFunction(() => document.getElementById('loss').value === 'grpo');
    assert.match(await page.textContent('#url-notice'), /TRL's GRPOTrainer brings: Loss: GRPO\. Set them/);
    assert.match(await readout(page), /its loss over their last 512 tokens/);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("brings verl's own defaults when verl is chosen, says so, and walks its weight sync", async () => {
    const { page, problems } = await harness.openPage();
    await page.selectOption('#stack', 'hf');
    await commit(page, '#dp', '8');
    await page.selectOption('#zero', '3');
    await page.selectOption('#rollout', 'vllm');
    await page.selectOption('#rl-trainer', 'verl');
    await page.waitForFunction(() => document.getElementById('rollout-memory-utilization').value === '0.5');
    assert.match(
      await page.textContent('#url-notice'),
      /verl \(1dda039b\) brings: Rollout memory utilization: 0\.5; Rollout sleep mode: on; Rollout prefix caching: on; Expandable segments: on; Rollout tensor parallel: 2\./,
    );
    assert.equal(await page.inputValue('#rollout-tensor-parallel'), '2');
    assert.equal(await page.isChecked('#expandable-segments'), true);
    const text = await readout(page);
    // Four phases, the weight sync first; Llama 3 8B's update, without recomputation, decides.
    assert.match(
      text,
      /the weight sync [\d.]+ GB \([\d.]+ GB\), the generation [\d.]+ GB \([\d.]+ GB\), the log-probabilities [\d.]+ GB \([\d.]+ GB\) and the update [\d.]+ GB \([\d.]+ GB\); the update decides/,
    );
    assert.match(text, /split over 2 devices in processes of its own, takes 42\.5 GB of each device/);
    assert.match(text, /verl's weight sync wakes vLLM's weights/);
    assert.match(text, /The update is verl's policy loss over the same logits/);
    // verl's LoRA is not modelled: refused, naming the RL trainer, the view kept.
    await commit(page, '#lora-rank', '16');
    await page.waitForFunction(() =>
      /verl's LoRA .* is not modelled/.test(
        [...document.querySelectorAll('.error')].map((element) => element.textContent).join(' '),
      ),
    );
    assert.equal(await readout(page), text);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('brings verl with SGLang, says so, and counts its share of the memory free as it starts', async () => {
    const { page, problems } = await harness.openPage();
    await page.selectOption('#stack', 'hf');
    await commit(page, '#dp', '8');
    await page.selectOption('#zero', '3');
    await page.selectOption('#rollout', 'sglang');
    await page.waitForFunction(() => document.getElementById('rl-trainer').value === 'verl');
    assert.match(
      await page.textContent('#url-notice'),
      /SGLang \(modelled under verl alone here\) brings: RL trainer: verl\. verl \(1dda039b\) brings: Loss: GRPO; Rollout memory utilization: 0\.5; Rollout sleep mode: on;/,
    );
    const text = await readout(page);
    assert.match(
      text,
      /SGLang, colocated at gpu_memory_utilization 0\.5 \(its mem_fraction_static: a share of the [\d.]+ GB free as it starts/,
    );
    assert.match(text, /a KV cache of [\d,]+ tokens \(65,536 B a token\) and its request table/);
    assert.match(text, /verl's weight sync wakes SGLang's weights/);
    // TRL drives vLLM alone: choosing it refuses SGLang at the engine's control, the view kept.
    await page.selectOption('#rl-trainer', 'trl');
    await page.waitForFunction(() =>
      /SGLang generates for verl's hybrid engine here .*choose verl, or vllm/.test(
        [...document.querySelectorAll('.error')].map((element) => element.textContent).join(' '),
      ),
    );
    assert.equal(await readout(page), text);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads a verl link with verl's defaults, and counts its loss over every packed token", async () => {
    const { page, problems } = await harness.openPage({ query: VERL });
    assert.match(
      await page.textContent('#url-notice'),
      /verl \(1dda039b\) brings, for the link: rollout-memory-utilization=0\.5, rollout-sleep-mode=on, rollout-prefix-caching=on, expandable-segments=on, rollout-tensor-parallel=2\./,
    );
    const text = await readout(page);
    assert.match(text, /The update is verl's policy loss over the same logits/);
    // The CLI's figures for the same flags: the generation, vLLM's 0.5 beside the actor's FP32
    // shards and AdamW's state, decides.
    assert.match(
      text,
      /the weight sync 30\.8 GB \(30\.9 GB\), the generation 55\.9 GB \(56\.0 GB\), the log-probabilities 23\.4 GB \(23\.8 GB\) and the update 27\.0 GB \(31\.7 GB\); the generation decides/,
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("counts verl's critic beside the actor when ticked, its values and update phases of their own", async () => {
    const { page, problems } = await harness.openPage({ query: VERL });
    const before = await readout(page);
    await page.check('#critic');
    await page.waitForFunction(() => /the values /.test(document.getElementById('readout').textContent));
    const text = await readout(page);
    assert.notEqual(text, before);
    // The CLI's figures for the same flags with --critic: the critic's 12 B a parameter over 8
    // devices (11.4 GB) in every phase, its values without logits, its update before the actor's.
    assert.match(
      text,
      /the weight sync 42\.2 GB \(42\.3 GB\), the generation 67\.3 GB \(67\.4 GB\), the log-probabilities 34\.7 GB \(37\.1 GB\), the values 30\.7 GB \(37\.1 GB\), the critic update 36\.5 GB \(39\.5 GB\) and the update 38\.4 GB \(41\.9 GB\); the generation decides/,
    );
    assert.match(await bodyText(page), /Critic's AdamW state \(verl\)/);
    assert.match(page.url(), /[?&]critic=on(&|$)/);
    // TRL trains no critic: choosing it holds the critic with why, the view kept.
    await page.selectOption('#rl-trainer', 'trl');
    await page.waitForFunction(() =>
      /The critic is verl's/.test(
        [...document.querySelectorAll('.error')].map((element) => element.textContent).join(' '),
      ),
    );
    assert.equal(await readout(page), text);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('puts vLLM to sleep through the update, and says when the generation decides', async () => {
    const { page, problems } = await harness.openPage({ query: GRPO });
    const awake = await readout(page);
    // Awake, vLLM's share is in every phase, and the update, the largest, decides.
    assert.match(
      awake,
      /Each phase of the RL step on each device, its allocated peak \(and what is reserved\) with the runtime: the generation [\d.]+ GB \([\d.]+ GB\), the log-probabilities [\d.]+ GB \([\d.]+ GB\) and the update [\d.]+ GB \([\d.]+ GB\); the update decides, and each fits the 76\.4 GB usable\./,
    );
    await page.check('#rollout-sleep-mode');
    await page.waitForFunction(() =>
      /asleep but for the generation/.test(document.getElementById('readout').textContent),
    );
    const asleep = await readout(page);
    assert.match(asleep, /Sleep mode \(TRL's vllm_enable_sleep_mode, level 2\)/);
    // The engine's share leaves the log-probabilities and the update: the generation, vLLM beside
    // what the trainer keeps, is the step's peak, and smaller than the update was awake.
    assert.match(asleep, /; the generation decides, and each fits/);
    assert.match(asleep, /at the step's peak, the rollout's generation, for 8,192 tokens/);
    assert.match(asleep, /25\.5 GB for the rollout engine/);
    const needs = (text) => Number(/needs ([\d.]+) GB/.exec(text)[1]);
    assert.ok(needs(asleep) < needs(awake));
    // At 0.75 the generation passes the usable memory.
    await commit(page, '#rollout-memory-utilization', '0.75');
    await page.waitForFunction(() => /The generation decides/.test(document.body.innerText));
    await page.waitForFunction(() => /Verdict: Does not fit\./.test(document.body.innerText));
    assert.match(await readout(page), /; the generation does not fit the 76\.4 GB usable\./);
    // The step's timeline walks the phases: the generation (its peak, vLLM woken), then the
    // log-probabilities and the update's passes.
    await page.click('#timeline summary');
    await page.waitForFunction(() => document.getElementById('timeline-summary').textContent !== '');
    assert.match(
      await page.textContent('#timeline-summary'),
      /^Allocated peak: [\d.]+ GB at generation,.*The most the caching allocator reserves in the step, [\d.]+ GB, is the estimate's total\./,
    );
    const named = await page.evaluate(() => globalThis.trainmemPage.timeline.namedMoments());
    assert.equal(named[0], 'generation', named.join(' | '));
    assert.ok(
      named.some((moment) => /^forward \d+$/.test(moment)),
      named.join(' | '),
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('refuses a utilization past the device, and an engine outside the hf stack, by the control', async () => {
    const { page, problems } = await harness.openPage({ query: GRPO });
    const good = await readout(page);
    await commit(page, '#rollout-memory-utilization', '1.5');
    assert.equal(await page.isVisible('#rollout-memory-utilization-error'), true);
    assert.match(await page.textContent('#rollout-memory-utilization-error'), /from 0\.01 to 1/);
    assert.equal(await readout(page), good);
    await commit(page, '#rollout-memory-utilization', '0.3');
    await page.selectOption('#stack', 'torchtune');
    assert.equal(await page.isVisible('#stack-error'), true);
    assert.match(await page.textContent('#stack-error'), /TRL's GRPOTrainer/);
    assert.equal(await readout(page), good);
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
