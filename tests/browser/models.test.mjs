// Any model and the downloads, in Chromium: a config.json pasted or chosen is read by the core
// (and a hostile one refused by its control), a custom model survives in a link, nothing a reader
// types is ever run or inserted as HTML, and the breakdown downloads as PNG, CSV and JSON.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { bodyText, commit, FORBIDDEN_TEXT, readout, startHarness } from './harness.mjs';

const MISTRAL_7B = JSON.stringify({
  _name_or_path: 'mistralai/Mistral-7B-v0.1',
  hidden_size: 4096,
  intermediate_size: 14336,
  num_attention_heads: 32,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  vocab_size: 32000,
  tie_word_embeddings: false,
});

// openai-community/gpt2's config.json on the Hugging Face hub: GPT-2's own field names.
const GPT2 = JSON.stringify({
  activation_function: 'gelu_new',
  architectures: ['GPT2LMHeadModel'],
  attn_pdrop: 0.1,
  bos_token_id: 50256,
  embd_pdrop: 0.1,
  eos_token_id: 50256,
  initializer_range: 0.02,
  layer_norm_epsilon: 1e-5,
  model_type: 'gpt2',
  n_ctx: 1024,
  n_embd: 768,
  n_head: 12,
  n_layer: 12,
  n_positions: 1024,
  resid_pdrop: 0.1,
  summary_activation: null,
  summary_first_dropout: 0.1,
  summary_proj_to_labels: true,
  summary_type: 'cls_index',
  summary_use_proj: true,
  task_specific_params: { 'text-generation': { do_sample: true, max_length: 50 } },
  vocab_size: 50257,
});

// deepseek-ai/DeepSeek-V3's config.json on the Hugging Face hub, its weight-bearing fields:
// latent attention, routed and shared experts, three dense layers.
const DEEPSEEK_V3 = JSON.stringify({
  architectures: ['DeepseekV3ForCausalLM'],
  attention_bias: false,
  first_k_dense_replace: 3,
  hidden_act: 'silu',
  hidden_size: 7168,
  intermediate_size: 18432,
  kv_lora_rank: 512,
  model_type: 'deepseek_v3',
  moe_intermediate_size: 2048,
  moe_layer_freq: 1,
  n_routed_experts: 256,
  n_shared_experts: 1,
  num_attention_heads: 128,
  num_experts_per_tok: 8,
  num_hidden_layers: 61,
  num_key_value_heads: 128,
  num_nextn_predict_layers: 1,
  q_lora_rank: 1536,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  tie_word_embeddings: false,
  v_head_dim: 128,
  vocab_size: 129280,
});

const XSS = '<img src=x onerror="window.pwned=1">';

describe('any model and the downloads, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  async function pasteConfig(page, text) {
    await page.fill('#config', text);
    await page.click('#use-config');
  }

  it('reads a pasted config.json with its own shape, and a link brings it back', async () => {
    const { page, problems } = await harness.openPage();
    await pasteConfig(page, MISTRAL_7B);
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('Mistral'));
    // A config of the reader's own is a practitioner's run: the logits count, said in words.
    // Its dropout is its config's (none: Korthikanti's 32·h, not the plate's 34·h), said too.
    assert.match(await readout(page), /^mistralai\/Mistral-7B-v0\.1 needs 153\.4 GB to train on one device/);
    assert.match(
      await readout(page),
      /Dropout as the config sets it: attention_dropout .*no residual dropout\.$/,
    );
    assert.match(await page.textContent('#url-notice'), /^The logits and the loss now count/);
    assert.equal(await page.inputValue('#model'), 'custom');
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('model'), 'custom');
    assert.equal(JSON.parse(url.searchParams.get('config')).hidden_size, 4096);

    const pasted = await readout(page);
    // Back to the plate's view keeps the reader's model (and leaves the logits out again).
    await page.click('#reset-further');
    assert.match(await readout(page), /^mistralai\/Mistral-7B-v0\.1 needs 150\.2 GB/);

    const reopened = await harness.openPage({ query: url.search });
    await reopened.page.waitForFunction(() =>
      document.getElementById('readout').textContent.includes('Mistral'),
    );
    assert.equal(await readout(reopened.page), pasted);
    assert.deepEqual([...problems, ...reopened.problems], []);
    await page.close();
    await reopened.page.close();
  });

  it('reads a pasted GPT-2 config.json by its own field names and shows its parameter count', async () => {
    const { page, problems } = await harness.openPage();
    // GPT-2's 1,024 learned positions bound its sequence: a sequence the reader set past them
    // refuses the config, by the sequence length's control.
    await commit(page, '#seq-len', '2048');
    await pasteConfig(page, GPT2);
    await page.waitForSelector('#seq-len-error:not([hidden])');
    assert.match(await page.textContent('#seq-len-error'), /has 1,024 learned positions/);
    await commit(page, '#seq-len', '1024');
    await page.click('#use-config');
    await page.waitForFunction(() =>
      document.getElementById('readout').textContent.includes('GPT2LMHeadModel'),
    );
    // 124,439,808 parameters: wte (tied to the head), wpe, 12 blocks and ln_f.
    assert.match(
      await readout(page),
      /^GPT2LMHeadModel needs [\d.]+ GB to train on one device: .*× 124\.4 ?M parameters\)/,
    );
    assert.equal(await page.inputValue('#model'), 'custom');
    assert.equal(await page.isHidden('#config-error'), true);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('reads a pasted DeepSeek-V3 config.json: latent attention and experts, 671 B, and a link keeps them', async () => {
    const { page, problems } = await harness.openPage();
    await pasteConfig(page, DEEPSEEK_V3);
    await page.waitForFunction(() =>
      document.getElementById('readout').textContent.includes('DeepseekV3ForCausalLM'),
    );
    // 671,026,419,200: the main model, without the multi-token-prediction module. The shape the
    // reader made comes back to the core through the bindings, every new field with it.
    assert.match(await readout(page), /× 671\.03 B parameters\)/);
    assert.equal(await page.isHidden('#config-error'), true);
    // The link holds the config, and the reopened page counts the same.
    const reopened = await harness.openPage({ query: new URL(page.url()).search });
    await reopened.page.waitForFunction(() =>
      document.getElementById('readout').textContent.includes('DeepseekV3ForCausalLM'),
    );
    assert.equal(await readout(reopened.page), await readout(page));
    assert.deepEqual([...problems, ...reopened.problems], []);
    await page.close();
    await reopened.page.close();
  });

  it('refuses a malformed or hostile config.json by its control and keeps the last good view', async () => {
    const { page, problems } = await harness.openPage();
    const goodText = await readout(page);
    const cases = [
      ['{"hidden_size": "4096"}', /^config\.json: 'hidden_size'/],
      ['{"model_type": "falcon", "hidden_size": 4096}', /^config\.json: 'model_type' must be one of llama, /],
      ['{"hidden_size": 1e400}', /^config\.json: /],
      ['['.repeat(50000), /^config\.json: /],
      ['{"__proto__": {"polluted": true}, "hidden_size": 4096}', /^config\.json: /],
      ['not json at all', /^config\.json: /],
      ['x'.repeat(2 * 1024 * 1024), /^config\.json: /],
    ];
    for (const [text, message] of cases) {
      await pasteConfig(page, text);
      await page.waitForSelector('#config-error:not([hidden])');
      assert.match(await page.textContent('#config-error'), message, text.slice(0, 40));
      assert.equal(await readout(page), goodText);
    }
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('reads a chosen config.json file, and refuses one over 1 MiB before reading it', async () => {
    const { page, problems } = await harness.openPage();
    await page.setInputFiles('#config-file', {
      name: 'config.json',
      mimeType: 'application/json',
      buffer: Buffer.from(MISTRAL_7B),
    });
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('Mistral'));
    await page.setInputFiles('#config-file', {
      name: 'big.json',
      mimeType: 'application/json',
      buffer: Buffer.alloc(1024 * 1024 + 1, ' '),
    });
    await page.waitForSelector('#config-error:not([hidden])');
    assert.match(await page.textContent('#config-error'), /1,048,577 bytes; at most 1,048,576 are read/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('never runs or inserts what a reader types, in a config or a URL', async () => {
    const payload = encodeURIComponent(XSS);
    const keys = ['model', 'tokens', 'flash-attention', 'seq-len', 'dp', 'zero', 'tp', 'sequence-parallel'];
    keys.push('pp', 'vpp', 'cp', 'recompute', 'optimizer', 'precision', 'logits', 'device', 'device-gb');
    const query = `?${keys.map((key) => `${key}=${payload}`).join('&')}&${payload}=1&config=${payload}`;
    const { page, problems } = await harness.openPage({ query });
    const notice = await page.textContent('#url-notice');
    for (const key of keys) assert.ok(notice.includes(`${key}=`) || key === 'model', `${key} refused`);
    const config = JSON.stringify({ ...JSON.parse(MISTRAL_7B), _name_or_path: XSS });
    await pasteConfig(page, config);
    await page.waitForFunction(() => document.getElementById('readout').textContent.includes('onerror'));
    assert.equal(await page.evaluate(() => window.pwned), undefined);
    assert.equal(await page.locator('img').count(), 0, 'no element was injected');
    // A 10 MB paste into a number field is refused like any other bad value: set as the paste
    // sets it, and committed by the change event that Enter fires (page.fill would type it through
    // the DevTools protocol, 20 s of the suite for the same commit).
    await page.evaluate(() => {
      const field = document.getElementById('dp');
      field.value = '9'.repeat(10 * 1024 * 1024);
      field.dispatchEvent(new Event('change', { bubbles: true }));
    });
    assert.match(await page.textContent('#dp-error'), /^Data parallelism must be a whole number/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('downloads each chart as PNG and the breakdown as CSV and as the CLI’s JSON', async () => {
    const { page, problems } = await harness.openPage();
    const save = async (button) => {
      const [download] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
      return { name: download.suggestedFilename(), body: await readFile(await download.path()) };
    };
    const png = await save('#export-breakdown-png');
    assert.equal(png.name, 'trainmem-llama3-8b-1x8192-memory.png');
    assert.deepEqual([...png.body.subarray(1, 4)], [0x50, 0x4e, 0x47]);
    assert.equal((await save('#export-activations-png')).name, 'trainmem-llama3-8b-1x8192-activations.png');
    const csv = await save('#export-csv');
    assert.equal(csv.name, 'trainmem-llama3-8b-1x8192.csv');
    assert.match(csv.body.toString(), /^term,bytes_per_parameter,bytes\n[\s\S]*total,16,164991401984\n$/);
    const json = JSON.parse((await save('#export-json')).body.toString());
    assert.equal(json.model, 'llama3-8b');
    assert.equal(json.bytes.total, 164991401984);
    assert.equal(json.devicesWorth, 164991401984 / 80e9);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
