// A student's afternoon, in Chromium: figures worded right near one device and for a custom
// capacity, a stale mark while a field is invalid, the right chart's line said in words, a link to
// copy, citations rather than paths, a pasted config named by its architecture, the savings worded
// plainly, and tables and selects that fit a phone.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { commit, readout, startHarness, tableRows } from './harness.mjs';

describe("a student's afternoon, in Chromium", () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it('gives the worth near one device the digits that decide it, and names a custom device exactly', async () => {
    const { page, problems } = await harness.openPage({ query: '?device=custom&device-gb=160' });
    // 165.0 GB over 160 GB: "1.0 … it does not fit" would contradict itself.
    assert.match(await readout(page), /That is 1\.03 devices' worth of memory, at 160 GB each\./);
    await commit(page, '#device-gb', '2.5');
    assert.match(await readout(page), /at 2\.5 GB each\./);
    await page.goto(`${harness.url}?dp=2&zero=3&device=custom&device-gb=2.5`);
    await page.waitForSelector('body[data-ready="true"]');
    assert.match(await readout(page), /It does not fit in one Custom 2\.5 GB/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('marks the readout and the charts as stale while a field is invalid', async () => {
    const { page, problems } = await harness.openPage();
    assert.equal(await page.isVisible('#stale-note'), false);
    await commit(page, '#dp', 'abc');
    assert.equal(await page.isVisible('#stale-note'), true);
    assert.match(await page.textContent('#stale-note'), /still show the last settings that were valid/);
    // It names the field at fault, and links to it.
    assert.equal(await page.getAttribute('#stale-field', 'href'), '#dp');
    assert.equal(
      await page.textContent('#stale-field'),
      await page.evaluate(() => document.querySelector('label[for="dp"]').textContent.trim()),
    );
    assert.equal(await page.evaluate(() => document.body.classList.contains('stale')), true);
    await commit(page, '#dp', '2');
    assert.equal(await page.isVisible('#stale-note'), false);
    assert.equal(await page.evaluate(() => document.body.classList.contains('stale')), false);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("keeps the caption's words for the plate's view to the plate's view", async () => {
    const { page, problems } = await harness.openPage();
    const caption = () => page.evaluate(() => document.querySelector('.caption').innerText);
    assert.match(await caption(), /FP32 master weights, Adam's FP32 moments/);
    assert.match(await caption(), /on one H100, nothing for any Llama\s3 size/);
    // Beyond it (eight devices under ZeRO 3, here), the caption no longer says what is not so.
    await page.goto(`${harness.url}?dp=8&zero=3&optimizer=adam-8bit`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForFunction(() => !/nothing for any/.test(document.querySelector('.caption').innerText));
    assert.doesNotMatch(await caption(), /Adam's FP32 moments/);
    assert.match(await caption(), /the model states of the chosen precision and optimiser/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("says in words what the right chart's line is: the room left for activations", async () => {
    const { page, problems } = await harness.openPage();
    assert.equal(
      await page.textContent('#activations-note'),
      'No room for activations: 128.5 GB of model states exceed the 72.0 GB usable of one H100 80 GB with ' +
        '10% kept free, so no micro-batch leaves room for activations.',
    );
    await page.goto(`${harness.url}?dp=8&zero=3&tp=2&sequence-parallel=on`);
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(
      await page.textContent('#activations-note'),
      'Dashed line: what is left for activations of the 72.0 GB usable of one H100 80 GB with 10% kept ' +
        'free, once it holds 8.0 GB of model states: 64.0 GB.',
    );
    // QLoRA on an RTX 4090 with the logits: the sentence's figures add up, and what it holds
    // beside the activations does exceed what the device offers.
    await page.goto(
      `${harness.url}?lora-rank=16&base-weights=nf4&device=rtx-4090&logits=on&loss=fp32-upcast&stack=hf` +
        '&precision=bf16&recompute=full&lora-targets=all-linear',
    );
    await page.waitForSelector('body[data-ready="true"]');
    const note = await page.textContent('#activations-note');
    const [held, states, logits, besides, usable] = note.match(/\d+\.\d(?= GB)/g).map(Number);
    assert.match(note, /^No room for activations: /);
    assert.ok(Math.abs(states + logits + besides - held) <= 0.15, note);
    assert.ok(held > usable, note);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('copies a link that opens the same view', async () => {
    const { page, problems } = await harness.openPage();
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.selectOption('#model', 'llama3-70b');
    await page.click('#copy-link');
    await page.waitForFunction(() => document.getElementById('copy-link-status').textContent !== '');
    assert.equal(await page.textContent('#copy-link-status'), 'Link copied: it opens this exact view.');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(copied, page.url());
    assert.match(copied, /model=llama3-70b/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('words the savings plainly, and cites the measured runs rather than naming files', async () => {
    const { page, problems } = await harness.openPage({ query: '?flash-attention=off' });
    await page.click('#savings summary');
    await page.waitForSelector('#savings-list li');
    const items = await page.$$eval('#savings-list li', (list) =>
      list.map((item) => item.firstChild.textContent),
    );
    assert.ok(
      items.includes('Turn on FlashAttention: saves 343.6 GB, leaving 165.0 GB on the most loaded device.'),
      items.join(' | '),
    );
    await page.click('#measured summary');
    await page.waitForSelector('#measured-table tbody tr');
    const table = await page.textContent('#measured-table');
    assert.match(table, /Source: torchtitan, Llama 3 benchmark on H100s, December 2024, Table 2\./);
    assert.match(table, /Source: trainmem's measurement harness, PyTorch 1\.13 on a CPU\./);
    assert.doesNotMatch(table, /\.py|\.md|tests\/data/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('names a pasted config.json by its architecture when it has no _name_or_path', async () => {
    const { page, problems } = await harness.openPage();
    await page.fill(
      '#config',
      JSON.stringify({
        architectures: ['LlamaForCausalLM'],
        model_type: 'llama',
        hidden_size: 2048,
        intermediate_size: 8192,
        num_attention_heads: 32,
        num_hidden_layers: 16,
        num_key_value_heads: 8,
        vocab_size: 128256,
        tie_word_embeddings: true,
      }),
    );
    await page.click('#use-config');
    await page.waitForFunction(() =>
      document.getElementById('readout').textContent.startsWith('LlamaForCausalLM'),
    );
    assert.equal(await page.textContent('#model option:checked'), 'LlamaForCausalLM (config.json)');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('says its prose about the Llama 3 sizes, in sentences that parse', async () => {
    const { page } = await harness.openPage();
    const intro = await page.textContent('.intro');
    assert.doesNotMatch(intro, /Total both/);
    assert.match(
      intro.replace(/\s+/g, ' '),
      /Even the smallest of the three, Llama 3 8B, needs more than 100 GB/,
    );
    await page.close();
  });

  it('on a phone, shows that wide tables scroll, and shows each choice whole', async () => {
    const { page, problems } = await harness.openPage({ viewport: { width: 390, height: 844 } });
    await page.click('#where-it-fits summary');
    await page.waitForSelector('#fit-map tbody tr'); // once the on-demand module has loaded
    const cue = await page.$eval('#where-it-fits .table-scroll', (box) => ({
      scrolls: box.scrollWidth > box.clientWidth,
      background: getComputedStyle(box).backgroundImage,
    }));
    assert.equal(cue.scrolls, true, 'the fit map is wider than a phone');
    assert.match(cue.background, /linear-gradient.*radial-gradient/);
    const clipped = await page.evaluate(() => {
      const context = document.createElement('canvas').getContext('2d');
      return [...document.querySelectorAll('#further select')]
        .filter((select) => {
          context.font = getComputedStyle(select).font;
          const widest = Math.max(
            ...[...select.options].map((option) => context.measureText(option.text).width),
          );
          return widest + 32 > select.clientWidth; // the arrow and the padding
        })
        .map((select) => select.id);
    });
    assert.deepEqual(clipped, []);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('ranks the fewest devices as a practitioner would, says why, and leaves the headroom set', async () => {
    const { page, problems } = await harness.openPage({ query: '?model=llama3-70b' });
    const hint = (await page.textContent('.fit .hint')).replace(/\s+/g, ' ');
    assert.match(hint, /within one 8-device node.*keeps 4,096 tokens/);
    await page.click('#find-fit');
    await page.waitForSelector('#fit-table tbody tr'); // once the on-demand module has loaded
    const rows = await tableRows(page, '#fit-table');
    assert.match(rows[0][0], /t 8 \(SP\) × p 1 × c 2 = 16 devices/);
    assert.match(rows[0][4], /^55: t 8 within one 8-device node/);
    assert.ok(rows.some((row) => /fewer than 4,096: too little to hide the ring's exchange/.test(row[4])));
    // No headroom: more layouts fit on 16 devices, still cheapest first.
    await commit(page, '#headroom', '0');
    await page.click('#find-fit');
    const all = await tableRows(page, '#fit-table');
    assert.ok(all.length > rows.length);
    const costs = all.map((row) => Number(row[4].split(':')[0]));
    assert.deepEqual(
      costs,
      [...costs].sort((left, right) => left - right),
    );
    assert.match(new URL(page.url()).search, /headroom=0/);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
