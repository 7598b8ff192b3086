// Sharing and hosting: the URL holds the whole view, a tampered URL keeps what it can, the page
// embeds in another origin's iframe and sizes it, works from file:// with no server, and offers
// the same estimates to other pages through its JavaScript entry point.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { serveFolder } from '../../scripts/serve.mjs';
import {
  bodyText,
  commit,
  coreEstimator,
  FORBIDDEN_TEXT,
  openFurther,
  readout,
  startHarness,
} from './harness.mjs';

describe('sharing and hosting, in Chromium', () => {
  let harness;

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
  });

  it('keeps every control in the URL, and the URL restores the exact view', async () => {
    const { page, problems } = await harness.openPage();
    const historyBefore = await page.evaluate(() => window.history.length);
    await page.selectOption('#model', 'llama3-70b');
    await page.fill('#tokens-slider', '3');
    await page.uncheck('#flash-attention');
    await commit(page, '#dp', '8');
    await page.selectOption('#zero', '2');
    await page.selectOption('#recompute', 'selective');
    await page.selectOption('#activations', 'llama-block');
    const search = new URL(page.url()).search;
    // Every setting the link carries, in the core table's order (the sequence length before the
    // tokens it divides), each at what was chosen or at its default.
    const chosen = {
      model: 'llama3-70b',
      tokens: '24576',
      'flash-attention': 'off',
      dp: '8',
      zero: '2',
      recompute: 'selective',
      activations: 'llama-block',
    };
    const { settings } = await coreEstimator();
    const linked = settings.filter((setting) => setting.inUrl);
    assert.equal(
      search,
      `?${linked.map((setting) => `${setting.id}=${chosen[setting.id] ?? setting.defaultText}`).join('&')}`,
    );
    assert.ok(
      search.startsWith('?model=llama3-70b&seq-len=8192&tokens=24576&flash-attention=off&dp=8&zero=2'),
    );
    const text = await readout(page);
    const historyAfter = await page.evaluate(() => window.history.length);
    assert.equal(historyAfter, historyBefore, 'replaceState: no history entry per change');

    const reopened = await harness.openPage({ query: search });
    assert.equal(await readout(reopened.page), text);
    assert.equal(await reopened.page.inputValue('#dp'), '8');
    assert.equal(await reopened.page.inputValue('#activations'), 'llama-block');
    assert.equal(await reopened.page.isVisible('#url-notice'), false);
    assert.deepEqual([...problems, ...reopened.problems], []);
    await page.close();
    await reopened.page.close();
  });

  it('ignores unknown or invalid URL values with a notice, and applies the rest', async () => {
    const query =
      '?model=llama3-70b&tp=3&dp=abc&zero=1&tokens=1000&colour=blue&flash-attention=maybe' +
      `&device=h200&optimizer=${'x'.repeat(5000)}`;
    const { page, problems } = await harness.openPage({ query });
    const notice = await page.textContent('#url-notice');
    assert.equal(await page.isVisible('#url-notice'), true);
    assert.match(notice, /Ignored the unknown setting “colour”\./);
    assert.match(notice, /Ignored flash-attention=“maybe”: use on or off\./);
    assert.match(notice, /Ignored tp=“3”: Tensor parallelism 3 must divide/);
    assert.match(notice, /Ignored dp=“abc”: Data parallelism must be a whole number/);
    assert.match(notice, /Ignored zero=“1”: ZeRO shards/);
    assert.match(notice, /Ignored optimizer=“x{40}…”: Optimizer/);
    assert.match(notice, /Ignored tokens=“1000”: Tokens per micro-batch must be a whole multiple/);
    // The rest still applies.
    assert.match(
      await readout(page),
      /^Llama 3 70B needs .* H200s' worth of memory, at 141 GB each\. Not counted: the output layer's logits/,
    );
    assert.doesNotMatch(await bodyText(page), FORBIDDEN_TEXT);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('embeds in an iframe on another origin, shows only the workshop and sizes its frame', async () => {
    const hostFolder = await mkdtemp(join(tmpdir(), 'trainmem-host-'));
    await writeFile(
      join(hostFolder, 'index.html'),
      `<!doctype html><html><body><h1>Another plate</h1>
       <iframe id="frame" title="trainmem" src="${harness.url}?embed=1" style="width:100%;border:0"></iframe>
       <script src="host.js"></script></body></html>`,
    );
    // The README's snippet: size the frame from the height it posts.
    await writeFile(
      join(hostFolder, 'host.js'),
      `window.addEventListener('message', (event) => {
         if (event.data && event.data.type === 'trainmem:height') {
           document.getElementById('frame').style.height = event.data.height + 'px';
         }
       });`,
    );
    const host = await serveFolder(hostFolder);
    assert.notEqual(new URL(host.url).origin, new URL(harness.url).origin);
    const page = await harness.openPage({ viewport: { width: 900, height: 800 } }).then(({ page }) => page);
    await page.goto(host.url);
    const frame = page.frameLocator('#frame');
    await frame.locator('body[data-ready="true"]').waitFor();
    assert.match(await frame.locator('#readout').textContent(), /165\.0 GB/);
    assert.equal(await frame.locator('.intro').isVisible(), false, 'no prose when embedded');
    assert.equal(await frame.locator('#further').isVisible(), false);

    const frameHeight = () => page.$eval('#frame', (element) => element.getBoundingClientRect().height);
    await page.waitForFunction(() => document.getElementById('frame').getBoundingClientRect().height > 400);
    const before = await frameHeight();
    await frame.locator('.numbers summary').click();
    await page.waitForFunction(
      (height) => document.getElementById('frame').getBoundingClientRect().height > height,
      before,
    );
    assert.ok((await frameHeight()) > before, 'the frame grew with its content');
    await page.close();
    host.server.close();
  });

  it('works opened straight from disk, with no server', async () => {
    const { page } = await harness.openPage();
    const problems = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    await page.goto(pathToFileURL(resolve('dist/index.html')).href);
    await page.waitForSelector('body[data-ready="true"]');
    assert.match(await readout(page), /Llama 3 8B needs 165\.0 GB/);
    assert.equal(await page.textContent('[data-figure="total-8b-no-flash"]'), '508.6 GB');
    await page.selectOption('#model', 'llama3-405b');
    assert.match(await readout(page), /Llama 3 405B needs 7\.1 TB/);
    // Go further and the full module load from disk too, when a reader opens it.
    await openFurther(page);
    await page.click('#where-it-fits summary');
    await page.waitForSelector('#fit-map tbody tr');
    assert.equal(await page.textContent('#where-it-fits-status'), '');
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('offers the same estimates to other pages through window.trainmem', async () => {
    const { page, problems } = await harness.openPage();
    await page.goto(`${harness.url}api-example.html`);
    await page.waitForSelector('body[data-ready="true"]');
    assert.equal(await page.textContent('#result'), 'Llama 3 70B: 1.3 TB in all');
    // The exploration views answer with promises, from the on-demand module.
    assert.equal(
      await page.textContent('#fewest'),
      'It fits on 16 × H100 80 GB at the fewest: d 1 (ZeRO-3 over d·c = 2) × t 8 (SP) × p 1 × c 2 = 16 devices, recompute full',
    );
    // What embind would truncate, wrap or throw on is refused with a message instead.
    const refused = await page.evaluate(async () => {
      const trainmem = await window.trainmem.load();
      const { layout, ...withoutLayout } = trainmem.defaultSetup;
      return [
        trainmem.estimate({ ...trainmem.defaultSetup, sequenceLength: 8192.7 }),
        trainmem.estimate({ ...trainmem.defaultSetup, layout: { ...layout, dataParallel: 2 ** 32 + 2 } }),
        trainmem.estimate(withoutLayout),
        trainmem.estimate({ ...trainmem.defaultSetup, recompute: 'sometimes' }),
      ].map((answer) => [answer.ok, answer.message]);
    });
    assert.deepEqual(refused, [
      [false, 'sequenceLength must be a whole number; it is 8192.7.'],
      [false, 'layout.dataParallel must be a whole number; it is 4294967298.'],
      [false, 'layout.dataParallel must be a whole number; it is undefined.'],
      [false, "Recomputation 'sometimes' is not known; choose one of none, selective, full, selective-op."],
    ]);
    // A setup written before activationModel existed is estimated as it was: Korthikanti's.
    const older = await page.evaluate(async () => {
      const trainmem = await window.trainmem.load();
      const { activationModel, loss, ...before } = trainmem.defaultSetup;
      const estimate = trainmem.estimate(before);
      const llama = trainmem.estimate({ ...before, activationModel: 'llama-block' });
      return [
        activationModel,
        estimate.ok,
        estimate.bytes.activationsBytes,
        llama.bytes.activationsBytes,
        (await trainmem.savedTensors(before)).bytesPerToken,
        (await trainmem.measured()).length,
      ];
    });
    // The measured cases: our thirty-one, torchao's three B200 runs, SimuMax's 19 Megatron-LM
    // runs, allocated and reserved, torchtune's seven flags rows and its 70B LoRA run, and
    // fms-acceleration's eleven Hugging Face rows, our ten H200 Trainer runs and Liger-Kernel's
    // example's two.
    assert.deepEqual(older, [
      'korthikanti',
      true,
      32 * 8192 * 34 * 4096,
      32 * 8192 * 139400,
      139400,
      31 + 3 + 4 + 2 * 19 + 7 + 1 + 11 + 10 + 2,
    ]);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
