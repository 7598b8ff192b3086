// Shared by the browser tests: a static server on dist/, Debian's Chromium, and pages that
// record every console error, page error and request off the page's origin.
import { chromium } from 'playwright-core';
import { serveFolder } from '../../scripts/serve.mjs';
import { fileURLToPath } from 'node:url';
import { loadCoreForNode } from '../../scripts/first-view.mjs';
import { launchOptions } from './chromium.mjs';

/** Text that must never reach the screen. */
export const FORBIDDEN_TEXT = /\bNaN\b|\bInfinity\b|\bundefined\b|\bnull\b/;

let estimatorPromise = null;

/** The full core the page goes on with, under Node: its table of every setting, for the tests. */
export function coreEstimator() {
  const built = (file) => fileURLToPath(new URL(`../../build-wasm/${file}`, import.meta.url));
  estimatorPromise ??= loadCoreForNode(built('trainmem-full.js'), built('trainmem-full.wasm'));
  return estimatorPromise;
}

// One server and one Chromium for every suite in the process: the test command runs all the
// suites in one (tests/run-page-tests.mjs), where each file's own would cost a Chromium's start
// and its first renderer. Each suite still has contexts of its own, closed with it; the browser
// closes once no suite has used it for a moment.
let shared = null;

async function acquireBrowser() {
  if (shared === null) {
    const starting = {
      users: 0,
      closing: null,
      ready: (async () => {
        const { server, url } = await serveFolder('dist');
        try {
          const browser = await chromium.launch(launchOptions);
          // A browser that crashes is not handed to the next suite.
          browser.on('disconnected', () => {
            if (shared === starting) shared = null;
          });
          return { server, url, browser };
        } catch (error) {
          server.close();
          throw error;
        }
      })(),
    };
    shared = starting;
    // A Chromium that fails to start fails this suite; the next one tries again.
    starting.ready.catch(() => {
      if (shared === starting) shared = null;
    });
  }
  const using = shared;
  clearTimeout(using.closing);
  using.users += 1;
  try {
    return { ...(await using.ready), release: () => releaseBrowser(using) };
  } catch (error) {
    using.users -= 1;
    throw error;
  }
}

function releaseBrowser(ending) {
  ending.users -= 1;
  if (ending.users > 0) return;
  ending.closing = setTimeout(async () => {
    if (shared === ending) shared = null;
    try {
      const { server, browser } = await ending.ready;
      server.close();
      await browser.close();
    } catch {
      // Already gone: nothing left to close.
    }
  }, 200);
}

export async function startHarness() {
  const { url, browser, release } = await acquireBrowser();
  let released = false;
  const contexts = [];
  const origin = new URL(url).origin;
  // A page a test has closed waits here for the next test at its size: Chromium then navigates
  // the renderer it has, where a new page would cost a new renderer process (half a second on two
  // cores). Each test still starts from a fresh load of the page, with only its own listeners.
  const idle = [];
  const USER_EVENTS = ['console', 'pageerror', 'request', 'response', 'requestfailed', 'dialog', 'download'];
  async function takePage(viewport) {
    const index = idle.findIndex((page) => {
      const size = page.viewportSize();
      return size.width === viewport.width && size.height === viewport.height;
    });
    if (index >= 0) {
      const [page] = idle.splice(index, 1);
      for (const event of USER_EVENTS) page.removeAllListeners(event);
      await page.unrouteAll();
      return page;
    }
    const context = await browser.newContext({ viewport });
    contexts.push(context);
    const page = await context.newPage();
    page.close = async () => {
      if (!idle.includes(page)) idle.push(page);
    };
    return page;
  }

  /**
   * Opens the page (with `query`, if any) once its first view is drawn, and Go further as a reader
   * opens it (its button), unless `further` is false: the first view alone.
   */
  async function openPage({ viewport = { width: 1280, height: 900 }, query = '', further = true } = {}) {
    const page = await takePage(viewport);
    const problems = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') {
        problems.push(`console ${message.type()}: ${message.text()}`);
      }
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('request', (request) => {
      const requestUrl = request.url();
      if (!requestUrl.startsWith('data:') && new URL(requestUrl).origin !== origin) {
        problems.push(`request off origin: ${requestUrl}`);
      }
    });
    await page.goto(url + query);
    await page.waitForSelector('body[data-ready="true"]');
    if (further) await openFurther(page);
    return { page, problems };
  }

  return {
    url,
    openPage,
    async close() {
      if (released) return;
      released = true;
      await Promise.all(contexts.map((context) => context.close().catch(() => {})));
      release();
    },
  };
}

/** Opens Go further as a reader does, where its button shows (not embedded, not opened by a link). */
export async function openFurther(page) {
  const opener = page.locator('#open-further');
  if (!(await opener.isVisible())) return;
  await opener.click();
  await page.waitForSelector('#further-controls');
  await page.waitForSelector('body[data-ready="true"]');
}

export const readout = (page) => page.textContent('#readout');

export const bodyText = (page) => page.evaluate(() => document.body.innerText);

/** Both charts' pixels, to tell whether they were redrawn. */
export const canvases = (page) =>
  page.evaluate(() => ({
    breakdown: document.getElementById('breakdown-chart').toDataURL(),
    activations: document.getElementById('activations-chart').toDataURL(),
  }));

/** Types into a text field and commits it as a reader does, with Enter. */
export async function commit(page, selector, text) {
  await page.fill(selector, text);
  await page.press(selector, 'Enter');
}

/** A table body's cells as text, row by row. */
export const tableRows = (page, selector) =>
  page.$$eval(`${selector} tbody tr`, (rows) =>
    rows.map((row) => [...row.cells].map((cell) => cell.textContent)),
  );
