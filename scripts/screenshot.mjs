// Screenshots of the built page at laptop and phone widths, for people to look at.
// Usage: node scripts/screenshot.mjs [outdir]   (writes laptop.png, phone.png and each one's workshop alone)
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serveFolder } from './serve.mjs';
import { launchOptions } from '../tests/browser/chromium.mjs';

const outdir = process.argv[2] ?? 'screenshots';
await mkdir(outdir, { recursive: true });
const { server, url } = await serveFolder('dist');
const browser = await chromium.launch(launchOptions);
try {
  for (const [name, viewport] of [
    ['laptop', { width: 1366, height: 900 }],
    ['phone', { width: 390, height: 844 }],
  ]) {
    const page = await browser.newPage({ viewport, deviceScaleFactor: name === 'phone' ? 2 : 1 });
    await page.goto(url);
    await page.waitForSelector('body[data-ready="true"]');
    await page.screenshot({ path: join(outdir, `${name}.png`), fullPage: true });
    await page.locator('#workshop').screenshot({ path: join(outdir, `${name}-workshop.png`) });
    console.log(`wrote ${join(outdir, `${name}.png`)} and ${name}-workshop.png`);
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
