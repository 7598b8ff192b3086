// Embedding under a host's rules: the workshop framed by a page on another origin computes, draws
// and posts its height in a sandboxed frame (with and without allow-same-origin), under a
// sub-path, from a server that sends .wasm with the wrong type, from file://, and in the theme
// the host asks for.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { serveFolder } from '../../scripts/serve.mjs';
import { launchOptions } from './chromium.mjs';
import { FORBIDDEN_TEXT } from './harness.mjs';

// The palettes' ink (the embedded page's own background is the host's).
const DARK_INK = 'rgb(236, 235, 230)';
const LIGHT_INK = 'rgb(29, 29, 27)';

/** A host page in its own folder whose frame shows `src`; it records each height posted. */
async function writeHost(src, sandbox) {
  const folder = await mkdtemp(join(tmpdir(), 'trainmem-host-'));
  await writeFile(
    join(folder, 'index.html'),
    `<!doctype html><html><head><title>Another plate</title></head><body><h1>Another plate</h1>
     <iframe id="frame" title="trainmem" src="${src}" style="width:100%;border:0"
       ${sandbox === null ? '' : `sandbox="${sandbox}"`}></iframe>
     <script src="host.js"></script></body></html>`,
  );
  // The README's snippet, and a record of what was posted.
  await writeFile(
    join(folder, 'host.js'),
    `window.heights = [];
     window.addEventListener('message', (event) => {
       if (event.data && event.data.type === 'trainmem:height') {
         window.heights.push(event.data.height);
         document.getElementById('frame').style.height = event.data.height + 'px';
       }
     });`,
  );
  return folder;
}

describe('embedding under a host page’s rules, in Chromium', () => {
  let browser;
  const servers = [];
  let plain;

  before(async () => {
    browser = await chromium.launch(launchOptions);
    plain = await serveFolder('dist');
    servers.push(plain);
  });

  after(async () => {
    await browser?.close();
    for (const { server } of servers) server.close();
  });

  /** Serves a host page framing `src` on its own origin (or opens it from disk). */
  async function host(src, { sandbox = null, fromDisk = false } = {}) {
    const folder = await writeHost(src, sandbox);
    if (fromDisk) return pathToFileURL(join(folder, 'index.html')).href;
    const served = await serveFolder(folder);
    servers.push(served);
    return served.url;
  }

  /**
   * Opens `hostUrl` and checks what every condition must give: the figures in the frame, both
   * charts drawn, the height posted and the frame sized; returns the page and the frame.
   */
  async function checkEmbedded(hostUrl, { colorScheme = 'light' } = {}) {
    const page = await browser.newPage({ viewport: { width: 900, height: 800 }, colorScheme });
    const errors = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(hostUrl);
    const frame = page.frameLocator('#frame');
    await frame.locator('body[data-ready="true"]').waitFor();
    assert.match(await frame.locator('#readout').textContent(), /Llama 3 8B needs 165\.0 GB/);
    assert.doesNotMatch(await frame.locator('body').innerText(), FORBIDDEN_TEXT);
    const painted = await frame.locator('body').evaluate(() =>
      ['breakdown-chart', 'activations-chart'].map((id) => {
        const canvas = document.getElementById(id);
        const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let opaque = 0;
        for (let index = 3; index < pixels.length; index += 4) opaque += pixels[index] > 0;
        return opaque;
      }),
    );
    assert.ok(
      painted.every((count) => count > 1000),
      `both charts drew: ${painted}`,
    );
    await page.waitForFunction(() => window.heights.length > 0 && window.heights.at(-1) > 400);
    const frameHeight = await page.$eval('#frame', (element) => element.getBoundingClientRect().height);
    assert.equal(frameHeight, await page.evaluate(() => window.heights.at(-1)));
    assert.deepEqual(errors, []);
    return { page, frame };
  }

  it('computes, draws and sizes its frame in a sandbox without allow-same-origin', async () => {
    const { page, frame } = await checkEmbedded(
      await host(`${plain.url}?embed=1`, { sandbox: 'allow-scripts' }),
    );
    assert.equal(await frame.locator('body').evaluate(() => window.origin), 'null');
    // Its controls still work, and it keeps its URL keys.
    await frame.locator('#model').selectOption('llama3-70b');
    assert.match(await frame.locator('#readout').textContent(), /Llama 3 70B needs/);
    assert.match(await frame.locator('body').evaluate(() => location.search), /model=llama3-70b/);
    await page.close();
  });

  it('works in a sandbox with allow-same-origin', async () => {
    const { page } = await checkEmbedded(
      await host(`${plain.url}?embed=1`, { sandbox: 'allow-scripts allow-same-origin' }),
    );
    await page.close();
  });

  it('works under a sub-path, from a server that sends .wasm as application/octet-stream', async () => {
    const served = await serveFolder('dist', 0, {
      prefix: '/plates/xiv-1/',
      types: { '.wasm': 'application/octet-stream' },
    });
    servers.push(served);
    assert.match(served.url, /\/plates\/xiv-1\/$/);
    const { page } = await checkEmbedded(await host(`${served.url}?embed=1`));
    await page.close();
  });

  it('works from file://, framed by a page on disk', async () => {
    const src = `${pathToFileURL(resolve('dist/index.html')).href}?embed=1`;
    const { page } = await checkEmbedded(await host(src, { fromDisk: true }));
    await page.close();
  });

  it('takes the theme the host asks for, whatever the reader’s system setting', async () => {
    const ink = (frame) => frame.locator('body').evaluate((body) => getComputedStyle(body).color);
    for (const [theme, colorScheme, expected] of [
      ['auto', 'light', LIGHT_INK],
      ['auto', 'dark', DARK_INK],
      ['light', 'dark', LIGHT_INK],
      ['dark', 'light', DARK_INK],
    ]) {
      const { page, frame } = await checkEmbedded(await host(`${plain.url}?embed=1&theme=${theme}`), {
        colorScheme,
      });
      assert.equal(await ink(frame), expected, `theme=${theme} on a ${colorScheme} system`);
      // The link keeps a theme other than auto.
      const search = await frame.locator('body').evaluate(() => location.search);
      assert.equal(search.includes(`theme=${theme}`), theme !== 'auto', search);
      await page.close();
    }
  });

  it('ignores an unknown theme with a notice, and keeps the reader’s setting', async () => {
    const page = await browser.newPage({ colorScheme: 'dark' });
    await page.goto(`${plain.url}?theme=sepia`);
    await page.waitForSelector('body[data-ready="true"]');
    assert.match(await page.textContent('#url-notice'), /Ignored theme=“sepia”: use auto, light, dark\./);
    assert.equal(await page.evaluate(() => getComputedStyle(document.body).color), DARK_INK);
    await page.close();
  });
});
