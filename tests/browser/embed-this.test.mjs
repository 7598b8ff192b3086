// "Embed this" on the page: the frame's snippet carries the current view with embed=1 and the
// chosen theme, keeps up as the view changes, copies, and pasted into another origin's page with
// its sizing script, shows the workshop embedded and sized to its frame.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveFolder } from '../../scripts/serve.mjs';
import { commit, FORBIDDEN_TEXT, startHarness } from './harness.mjs';

/**
 * The snippet and its frame's src, as HTML reads the attribute ('&amp;' is '&'); a real page reads
 * the whole snippet in the last test. (A DOMParser here would count as the page's own inline style.)
 */
async function frameOf(page) {
  // The panel fills its snippet on the <details> toggle event, a task after the click.
  await page.waitForFunction(() => document.getElementById('embed-code').value !== '');
  const snippet = await page.inputValue('#embed-code');
  const [, src] = snippet.match(/<iframe id="trainmem" [^>]*src="([^"]*)"/);
  assert.doesNotMatch(src.replaceAll('&amp;', ''), /&/, 'every & written as &amp;');
  return { snippet, src: src.replaceAll('&amp;', '&') };
}

describe('"Embed this", in Chromium', () => {
  let harness;
  const servers = [];

  before(async () => {
    harness = await startHarness();
  });

  after(async () => {
    await harness?.close();
    for (const { server } of servers) server.close();
  });

  it('gives the current view’s frame in the chosen theme, and the script that sizes it', async () => {
    const { page, problems } = await harness.openPage();
    await page.click('#embed-this summary');
    let frame = await frameOf(page);
    assert.doesNotMatch(frame.snippet, FORBIDDEN_TEXT);
    const here = new URL(page.url());
    const src = new URL(frame.src);
    assert.equal(src.origin + src.pathname, here.origin + here.pathname, 'an absolute address');
    assert.equal(src.search, `?embed=1&${here.search.slice(1)}`, 'this view, embedded, in auto');
    assert.match(src.search, /&model=llama3-8b&/);

    // A change of the view follows into the snippet; so does the theme chosen.
    await page.selectOption('#model', 'llama3-70b');
    await commit(page, '#dp', '8');
    const search = new URL(page.url()).search;
    assert.match(search, /model=llama3-70b.*&dp=8&/);
    assert.equal(new URL((await frameOf(page)).src).search, `?embed=1&${search.slice(1)}`);
    await page.selectOption('#embed-theme', 'dark');
    frame = await frameOf(page);
    assert.equal(new URL(frame.src).search, `?embed=1&theme=dark&${search.slice(1)}`);
    await page.selectOption('#embed-theme', 'light');
    assert.match((await frameOf(page)).src, /\?embed=1&theme=light&model=llama3-70b&/);

    // Copied as shown.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.click('#copy-embed');
    // The clipboard answers asynchronously: the status follows it (a busy machine lags the click).
    await page.waitForFunction(() => document.getElementById('embed-status').textContent !== '');
    assert.equal(await page.textContent('#embed-status'), 'The frame copied.');
    assert.equal(
      await page.evaluate(() => navigator.clipboard.readText()),
      await page.inputValue('#embed-code'),
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('pasted into another origin’s page with its script, shows the view embedded and sized', async () => {
    const { page: source } = await harness.openPage({ viewport: { width: 1366, height: 900 } });
    await source.selectOption('#model', 'llama3-70b');
    await source.click('#embed-this summary');
    await source.selectOption('#embed-theme', 'dark');
    const snippet = await source.inputValue('#embed-code');
    const script = await source.inputValue('#embed-script');
    await source.close();

    const folder = await mkdtemp(join(tmpdir(), 'trainmem-blog-'));
    await writeFile(
      join(folder, 'index.html'),
      `<!doctype html><html lang="en"><head><title>A blog</title></head><body>
       <h1>A post about memory</h1>${snippet}${script}</body></html>`,
    );
    const blog = await serveFolder(folder);
    servers.push(blog);

    const { page } = await harness.openPage();
    await page.goto(blog.url);
    const frame = page.frameLocator('#trainmem');
    await frame.locator('body[data-ready="true"]').waitFor();
    assert.match(await frame.locator('#readout').textContent(), /^Llama 3 70B needs/);
    // The embedded layout, in the theme chosen: the workshop alone.
    assert.equal(await frame.locator('html').getAttribute('class'), 'embed');
    assert.equal(await frame.locator('html').getAttribute('data-theme'), 'dark');
    assert.equal(await frame.locator('.prose').first().isVisible(), false);
    // The script sizes the frame to the height the page posts.
    const inner = await frame
      .locator('html')
      .evaluate((html) => Math.ceil(html.getBoundingClientRect().height));
    await page.waitForFunction(
      (height) => document.getElementById('trainmem').getBoundingClientRect().height === height,
      inner,
    );
    await page.close();
  });
});
