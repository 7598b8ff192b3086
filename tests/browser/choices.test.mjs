// The reader's choices, in Chromium: no choice is dropped without a word. Every setting's every
// choice is set from the plate's view and from saved views, then a second, unrelated change is
// made, as a reader's next step; the choice must still show (applied, or held pending with why),
// every other control it moved must be named in words, and no message may ask for a control the
// page has disabled.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodyText, coreEstimator, FORBIDDEN_TEXT, readout, startHarness } from './harness.mjs';

const SAVED_VIEWS = {
  "the plate's view": '',
  'QLoRA with its loss': '?lora-rank=16&base-weights=nf4&logits=on&loss=fp32-upcast&offload=optimizer',
  // torchtitan on 8 devices, in FP8 with its all-gather: FSDP2's own switches besides the stack's.
  'torchtitan in FP8 with its all-gather':
    '?dp=8&zero=3&stack=torchtitan&precision=fp8-mixed&fp8-all-gather=on&logits=on&loss=fp32-upcast',
  'a mixture of experts': '?model=mixtral-8x7b&dp=8&ep=8&zero=1&tp=2&sequence-parallel=on',
  // transformers' Trainer with LoRA, before any RL setting: the loss is disabled (no logits), so
  // the RL settings' messages may not ask for it.
  "transformers' Trainer with LoRA":
    '?model=qwen3-8b&stack=hf&precision=bf16&lora-rank=16&seq-len=4096&tokens=8192',
  'RL post-training, vLLM colocated':
    '?model=qwen3-8b&stack=hf&precision=bf16&lora-rank=16&seq-len=4096&tokens=8192&rollout=vllm',
  // verl's hybrid engine over 8 devices, with SGLang and its actor offloaded: its trainer's own
  // rules on ZeRO, LoRA and the precision; SGLang refused under TRL (the walk sets vllm too);
  // offload allowed under verl alone.
  "RL post-training, verl's hybrid engine with SGLang, offloaded":
    '?model=qwen3-8b&stack=hf&dp=8&zero=3&recompute=full&seq-len=4096&tokens=8192&rollout=sglang' +
    '&rl-trainer=verl&offload=optimizer-and-weights',
};

/** Numbers a reader might type, by setting (each within the core's bounds). */
const TYPED = {
  'seq-len': ['1024', '4096', '32768'],
  tokens: ['16384', '65536'],
  'capacity-factor': ['1.25'],
  'device-gb': ['24', '141'],
  headroom: ['0', '25'],
};

/** The walk, run in the page: returns every choice the page dropped or explained wrongly. */
function walk(plan) {
  const failures = [];
  const $ = (id) => document.getElementById(id);
  const valueOf = (id) => ($(id).type === 'checkbox' ? ($(id).checked ? 'on' : 'off') : $(id).value);
  const set = (id, text) => {
    if ($(id).type === 'checkbox') $(id).checked = text === 'on';
    else $(id).value = text;
    $(id).dispatchEvent(new Event('change', { bubbles: true }));
  };
  const messages = () =>
    [...document.querySelectorAll('.error, #url-notice')]
      .filter((element) => !element.hidden && element.textContent.trim())
      .map((element) => element.textContent);
  const mentions = (texts, name) => texts.some((text) => text.toLowerCase().includes(name.toLowerCase()));
  const values = () => Object.fromEntries(plan.map(({ id }) => [id, valueOf(id)]));
  const original = values();
  // The view back as it was: the page may hold a restored choice pending until the rest is back.
  // The headroom, the reader's next step below, is left at its nudge (a point or two above the
  // view's) but after its own choices: a fifth of the walk's changes, which move the verdict's
  // usable memory and no control's rule.
  const restore = (all) => {
    for (let round = 0; round < 3; round += 1) {
      for (const { id } of plan) {
        if ((all || id !== 'headroom') && valueOf(id) !== original[id]) set(id, original[id]);
      }
    }
  };
  const nudges = ['11', '12', '13'].filter((value) => value !== original.headroom);

  // The address bar is share.test.mjs's concern. Here each change's replaceState, milliseconds of
  // Chromium's work and a quarter of the walk's time, goes nowhere: the page still writes each
  // view's query (viewQuery runs), and only the history call is skipped.
  const replaceState = history.replaceState;
  history.replaceState = () => {};
  try {
    for (const { id, name, texts } of plan) {
      for (const text of texts) {
        if (text === original[id] || $(id).disabled) continue;
        const before = values();
        set(id, text);
        const said = messages();
        const chose = `${id}=${text}`;
        // Whatever else moved is said in words, by its setting's name.
        for (const other of plan) {
          if (other.id !== id && valueOf(other.id) !== before[other.id] && !mentions(said, other.name)) {
            failures.push(
              `${chose} moved ${other.id} without a word (${said.join(' | ') || 'nothing said'})`,
            );
          }
        }
        // The reader's next step, elsewhere: the choice must survive it, applied or held with why.
        if (id !== 'headroom') set('headroom', valueOf('headroom') === nudges[0] ? nudges[1] : nudges[0]);
        const after = messages();
        if (valueOf(id) !== text) {
          failures.push(`${chose} was dropped without a word: it shows ${valueOf(id)}`);
        } else if ($(id).dataset.pending === 'true' && !mentions(after, 'Not applied yet')) {
          failures.push(`${chose} is held pending with nothing said`);
        }
        // No message asks for a control the reader cannot change.
        for (const other of plan) {
          if ($(other.id).disabled && mentions([...said, ...after], other.name)) {
            failures.push(
              `${chose}: a message names ${other.id}, which is disabled (${[...said, ...after].join(' | ')})`,
            );
          }
        }
        restore(id === 'headroom');
        const back = values();
        const differs = plan
          .filter(
            ({ id: other }) => (id === 'headroom' || other !== 'headroom') && back[other] !== original[other],
          )
          .map(({ id: other }) => other);
        if (differs.length > 0 || document.querySelector('[data-pending]')) {
          failures.push(
            `${chose}: the view did not come back (${differs.join(', ') || 'a choice still pending'})`,
          );
          return failures;
        }
      }
    }
  } finally {
    history.replaceState = replaceState;
  }
  return failures;
}

describe('The reader’s choices, in Chromium', () => {
  let harness;
  let plan;

  before(async () => {
    harness = await startHarness();
    const estimator = await coreEstimator();
    const { WHOLE, SWITCH, CHOICE } = estimator.settingKinds;
    // Every setting with a control: each of its choices, both sides of a switch, and a few numbers.
    plan = estimator.settings.map((setting) => {
      let texts = TYPED[setting.id];
      if (setting.kind === CHOICE) texts = setting.choices.map((choice) => choice.id);
      else if (setting.kind === SWITCH) texts = ['on', 'off'];
      else if (!texts && setting.kind === WHOLE) {
        texts = [setting.min, 2, 8].filter((value) => value <= setting.max).map(String);
      }
      return { id: setting.id, name: setting.name, texts: texts ?? [] };
    });
  });

  after(async () => {
    await harness?.close();
  });

  for (const [view, query] of Object.entries(SAVED_VIEWS)) {
    it(`from ${view}, every choice of every setting shows or says why, and survives the next change`, async () => {
      const { page, problems } = await harness.openPage({ query });
      const controls = await page.evaluate(
        (ids) => ids.filter((id) => document.getElementById(id)?.matches('input, select')),
        plan.map(({ id }) => id),
      );
      // The model menu's choices are the page's (a config.json adds one).
      const placed = plan.filter(({ id }) => controls.includes(id));
      assert.ok(placed.length >= 30, `${placed.length} controls`);
      const failures = await page.evaluate(walk, placed);
      assert.deepEqual(failures, []);
      assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
      assert.deepEqual(problems, []);
      await page.close();
    });
  }

  it('holds a stack the layout refuses, and applies it in words once the layout allows it', async () => {
    const { page, problems } = await harness.openPage();
    await page.selectOption('#stack', 'torchtitan');
    assert.equal(await page.getAttribute('#stack', 'data-pending'), 'true');
    assert.match(await page.textContent('#stack-error'), /^Not applied yet: .*It applies by itself/);
    assert.match(await readout(page), /^Llama 3 8B needs 165\.0 GB to train on one device/);
    await page.fill('#dp', '8');
    await page.press('#dp', 'Enter');
    // Still pending while ZeRO is 0, if torchtitan needs it sharded; then ZeRO-3 lets it in.
    await page.selectOption('#zero', '3');
    assert.equal(await page.inputValue('#stack'), 'torchtitan');
    assert.equal(await page.getAttribute('#stack', 'data-pending'), null);
    assert.match(await page.textContent('#url-notice'), /Applied your earlier choice.*Stack: torchtitan/);
    assert.equal(await page.isVisible('#stack-readout'), true);
    assert.equal(await page.isVisible('#stale-note'), false);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('never shows a model past its positions without a word', async () => {
    const { page, problems } = await harness.openPage({ query: '?seq-len=16384' });
    assert.match(
      await readout(page),
      /Beyond its positions: Llama 3 8B takes sequences of up to 8,192 tokens \(max_position_embeddings\); one of 16,384 needs its RoPE extended first/,
    );
    await page.selectOption('#model', 'gpt2');
    assert.equal(await page.getAttribute('#model', 'data-pending'), 'true');
    assert.match(await page.textContent('[data-error-default]'), /GPT-2 124M has 1,024 learned positions/);
    await page.fill('#seq-len', '1024');
    await page.press('#seq-len', 'Enter');
    assert.match(await readout(page), /^GPT-2 124M needs/);
    assert.doesNotMatch(await readout(page), /Beyond its positions/);
    const notice = await page.textContent('#url-notice');
    assert.match(notice, /Tokens per micro-batch stays 16,384: 16 sequences of 1,024 tokens\./);
    assert.match(notice, /Applied your earlier choice, which the setup now allows: Model: GPT-2 124M\./);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('under torchtitan, ticking the logits asks for a loss the reader can then choose', async () => {
    const { page, problems } = await harness.openPage({ query: '?dp=8&zero=3&stack=torchtitan' });
    await page.check('#logits');
    assert.match(await page.textContent('#logits-error'), /fp32-upcast or chunked-wrapper loss/);
    assert.equal(await page.isChecked('#logits'), true);
    assert.equal(await page.isEnabled('#loss'), true);
    await page.selectOption('#loss', 'fp32-upcast');
    assert.equal(await page.getAttribute('#logits', 'data-pending'), null);
    assert.match(await readout(page), /of logits/);
    assert.match(await page.textContent('#url-notice'), /Applied your earlier choice.*Logits: on/);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
