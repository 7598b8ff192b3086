// The benchmark's floor: the baseline page (baseline/), bundled as build-web.mjs bundles the real
// one. bench.mjs and trace.mjs measure trainmem's page against it in the same run.
import { build } from 'esbuild';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BASELINE_SOURCE = fileURLToPath(new URL('baseline/', import.meta.url));

/** Bundles the baseline page into `folder`, as build-web.mjs bundles the real one. */
export async function buildBaseline(folder) {
  await build({
    entryPoints: [join(BASELINE_SOURCE, 'baseline.js')],
    outfile: join(folder, 'app.js'),
    bundle: true,
    format: 'iife',
    minify: true,
    target: ['es2020'],
    legalComments: 'linked',
    logLevel: 'warning',
  });
  await copyFile(join(BASELINE_SOURCE, 'index.html'), join(folder, 'index.html'));
}
