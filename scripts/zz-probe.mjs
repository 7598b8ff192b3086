import { startHarness, tableRows } from '../tests/browser/harness.mjs';
const h = await startHarness();
for (const query of ['?lora-rank=16&base-weights=nf4&offload=optimizer&offload-activations=on', '?model=mistral-7b&stack=hf&precision=bf16&seq-len=2048&recompute=full', '?dp=8&zero=3&tp=2&sequence-parallel=on&stack=megatron', '?model=deepseek-v3', '?dp=8&zero=1&stack=deepspeed']) {
  const { page } = await h.openPage({ query: query === 'qlora' ? '' : query });
  if (query === 'qlora') { await page.click('#try-qlora'); }
  await page.click('.numbers summary');
  await page.waitForSelector('#breakdown-table tbody tr');
  const text = await page.evaluate(() => ['readout', 'host-readout', 'stack-readout', 'stack-verdict', 'activations-note', 'url-notice'].map((id) => { const e = document.getElementById(id); return `${id}${e.hidden ? ' (hidden)' : ''}: ${e.textContent}`; }).join('\n'));
  console.log('=== ' + query + '\n' + text);
  console.log(JSON.stringify(await tableRows(page, '#breakdown-table')));
  console.log(await page.evaluate(() => [...document.querySelectorAll('.caption [data-plate-view], .caption [data-beyond-plate]')].map((e) => `${e.hidden}:${e.textContent.trim().slice(0, 50)}`).join(' | ')));
  await page.close();
}
await h.close();
