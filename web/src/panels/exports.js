// Downloads: each chart as PNG, the breakdown as CSV or as JSON in the CLI's schema (written by the
// core, in trainmem-full.js); the link to this view, and the frame that embeds it (embed.js).
import { loadFullTools } from '../estimator.js';
import { showNotice } from '../controls.js';
import { $, download, downloadText } from '../dom.js';
import { createEmbedPanel } from './embed.js';

export function createExports({ estimator, store, charts }) {
  const fileStem = () => {
    const { setup } = store.get();
    return `trainmem-${setup.modelId}-${setup.microBatchSequences}x${setup.sequenceLength}`;
  };
  $('export-breakdown-png').addEventListener('click', () =>
    download(`${fileStem()}-memory.png`, charts.toPng('breakdown')),
  );
  $('export-activations-png').addEventListener('click', () =>
    download(`${fileStem()}-activations.png`, charts.toPng('activations')),
  );
  const exportText = (extension, type, write) =>
    loadFullTools()
      .then((tools) => downloadText(`${fileStem()}.${extension}`, type, write(tools)))
      .catch((error) => showNotice(`The download could not be made (${error.message}).`));
  $('export-csv').addEventListener('click', () =>
    exportText('csv', 'text/csv', (tools) => tools.toCsv(store.get().setup)),
  );
  // The address is the view (url.js keeps it current): copied, or shown to copy by hand where the
  // clipboard is not offered (a page opened from file://, a sandboxed frame).
  $('copy-link').addEventListener('click', async () => {
    const status = $('copy-link-status');
    try {
      await navigator.clipboard.writeText(location.href);
      status.textContent = 'Link copied: it opens this exact view.';
    } catch {
      status.textContent = `Copy this link to share this exact view: ${location.href}`;
    }
  });
  $('export-json').addEventListener('click', () =>
    exportText('json', 'application/json', (tools) => tools.toJson(store.get().setup)),
  );
  createEmbedPanel({ estimator, store });
}
