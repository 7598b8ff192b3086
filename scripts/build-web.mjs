// Bundles the page into dist/: app.js (the charts and the Chart.js parts they register, drawn
// first), workshop.js (the controls, the readout and the panels the first view shows), further.js
// (Go further: its body, web/further.html with each setting's control from the core's table, and
// its panels, loaded when a reader opens it), explore.js (the exploration views' panels, loaded
// when a reader opens one), yaml.js (the launch panel's YAML parser, loaded when it opens), the
// first view's estimator trainmem.js with trainmem.wasm (the plate's view alone; trainmem-wasm.js,
// the same bytes for file://), the full module trainmem-full.js with trainmem-full.wasm (and
// trainmem-full-wasm.js), loaded with Go further, index.html with the plate's default view written
// in (first-view.mjs) and its stylesheet inside it, and favicon.svg; and the entry point for
// other pages, trainmem-api.js, with its example api-example.html and its types,
// trainmem-api.d.ts (the setup's types made from the table too).
import { build, transform } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCoreForNode, writeFirstView } from './first-view.mjs';
import { withSettingControls, withSetupTypes } from './settings-page.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const wasmModule = join(root, 'build-wasm', 'trainmem.js');
const wasmBinary = join(root, 'build-wasm', 'trainmem.wasm');
const fullModule = join(root, 'build-wasm', 'trainmem-full.js');
const fullBinary = join(root, 'build-wasm', 'trainmem-full.wasm');

if (![wasmModule, wasmBinary, fullModule, fullBinary].every(existsSync)) {
  console.error(
    'build-web: build-wasm/ lacks trainmem.js, trainmem-full.js or their .wasm; run scripts/build.sh',
  );
  process.exit(1);
}

/**
 * styles.css with the dark palette (dark.css, one :root block) in it twice: under the reader's
 * system setting unless a link or host page asks for theme=light, and always for theme=dark
 * (readout.js's applyTheme sets data-theme). One sheet, so that no late stylesheet restyles the
 * page as its charts are drawn.
 */
function withDarkPalette(styles, dark) {
  const palette = /:root\s*\{([^}]*)\}/.exec(dark)?.[1];
  if (!palette) throw new Error('build-web: web/dark.css has no :root { … } block');
  return (
    `${styles}\n@media (prefers-color-scheme: dark) {\n  :root:not([data-theme='light']) {${palette}}\n}\n` +
    `:root[data-theme='dark'] {${palette}}\n`
  );
}

/**
 * The page's stylesheet, minified, put inside index.html in place of its <link> (web/index.html
 * links styles.css), with the sheet's hash added to the Content-Security-Policy's style-src so
 * that this one inline sheet, and no other, applies. Why inside: the page's first paint then
 * waits for nothing fetched, and happens while app.js is still on its way, not after it arrives
 * and before it runs (README, "Speed and size").
 */
function withStylesInside(html, css) {
  const link = '<link rel="stylesheet" href="styles.css" />';
  const policy = /(<meta\s+http-equiv="Content-Security-Policy"\s+content="[^"]*style-src 'self')/;
  if (!html.includes(link) || !policy.test(html)) {
    throw new Error("build-web: web/index.html lacks styles.css's <link> or the policy's style-src 'self'");
  }
  if (css.includes('</')) throw new Error('build-web: the stylesheet would close its <style> element');
  const hash = createHash('sha256').update(css).digest('base64');
  return html.replace(policy, `$1 'sha256-${hash}'`).replace(link, () => `<style>${css}</style>`);
}

/**
 * index.html without what only its source needs: its comments, and the indentation after each line
 * break (a run of white space with a line break in it becomes that line break). HTML collapses such
 * a run to one space wherever it is shown, so the page reads and lays out the same; the page has no
 * <pre> and no text inside a <textarea>, where white space would be kept, and the build says so if
 * it ever gains one. About 1 KB gzipped.
 */
function withoutIndentation(html) {
  if (/<pre[\s>]/.test(html) || /<textarea[^>]*>[^<]/.test(html)) {
    throw new Error(
      'build-web: web/index.html has a <pre> or a <textarea> with text: its white space matters',
    );
  }
  return html.replace(/<!--[\s\S]*?-->/g, '').replace(/[ \t]*\n\s*/g, '\n');
}

/** An Emscripten module's script from build-wasm/, minified into dist/ as `name`. */
const minifyGlue = (path, name) =>
  readFile(path, 'utf8').then(async (glue) =>
    writeFile(join(dist, name), (await transform(glue, { minify: true, target: 'es2020' })).code),
  );

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });

// The first view's estimator (the plate's view alone) writes the first view; the full one, whose
// table has every setting, writes the settings' controls and the API's setup types.
const [estimator, full] = await Promise.all([
  loadCoreForNode(wasmModule, wasmBinary),
  loadCoreForNode(fullModule, fullBinary),
]);
// Go further's body: web/further.html with each setting's control in its fieldset, without its
// comments and indentation, bundled into further.js.
const furtherHtml = withoutIndentation(
  withSettingControls(
    await readFile(join(root, 'web', 'further.html'), 'utf8'),
    full.settings,
    full.settingKinds,
  ),
);

const bundle = (entry, outfile, define = {}) =>
  build({
    entryPoints: [join(root, 'web', 'src', entry)],
    outfile: join(dist, outfile),
    bundle: true,
    format: 'iife',
    minify: true,
    target: ['es2020'],
    legalComments: 'linked',
    logLevel: 'warning',
    define,
  });
await Promise.all([
  bundle('first-view.js', 'app.js'),
  bundle('main.js', 'workshop.js'),
  bundle('further.js', 'further.js', { 'globalThis.FURTHER_HTML': JSON.stringify(furtherHtml) }),
  bundle('explore.js', 'explore.js'),
  bundle('yaml.js', 'yaml.js'),
  bundle('api.js', 'trainmem-api.js'),
]);

const styles = Promise.all([
  readFile(join(root, 'web', 'styles.css'), 'utf8'),
  readFile(join(root, 'web', 'dark.css'), 'utf8'),
])
  .then(([sheet, dark]) => transform(withDarkPalette(sheet, dark), { loader: 'css', minify: true }))
  .then(({ code }) => code.trim());

await Promise.all([
  Promise.all([readFile(join(root, 'web', 'index.html'), 'utf8'), styles]).then(([html, css]) =>
    writeFile(
      join(dist, 'index.html'),
      withStylesInside(writeFirstView(withoutIndentation(html), estimator), css),
    ),
  ),
  // Go further's own sheet, fetched with its body (main.js): the first view never carries it.
  readFile(join(root, 'web', 'further.css'), 'utf8')
    .then((sheet) => transform(sheet, { loader: 'css', minify: true }))
    .then(({ code }) => writeFile(join(dist, 'further.css'), code)),
  copyFile(join(root, 'web', 'noscript.css'), join(dist, 'noscript.css')),
  copyFile(join(root, 'web', 'favicon.svg'), join(dist, 'favicon.svg')),
  copyFile(join(root, 'web', 'api-example.html'), join(dist, 'api-example.html')),
  copyFile(join(root, 'web', 'api-example.js'), join(dist, 'api-example.js')),
  readFile(join(root, 'web', 'trainmem-api.d.ts'), 'utf8').then((declaration) =>
    writeFile(join(dist, 'trainmem-api.d.ts'), withSetupTypes(declaration, full.settings, full.settingKinds)),
  ),
  // Each module: Emscripten's glue, minified as the page's own scripts are (a quarter fewer
  // bytes); its WebAssembly; and for file://, where no browser lets a page fetch its own files,
  // the same bytes as a script.
  ...[
    [wasmModule, wasmBinary, 'trainmem', 'trainmemWasmBase64'],
    [fullModule, fullBinary, 'trainmem-full', 'trainmemFullWasmBase64'],
  ].flatMap(([glue, binary, name, global]) => [
    minifyGlue(glue, `${name}.js`),
    copyFile(binary, join(dist, `${name}.wasm`)),
    readFile(binary).then((bytes) =>
      writeFile(join(dist, `${name}-wasm.js`), `globalThis.${global} = '${bytes.toString('base64')}';\n`),
    ),
  ]),
]);
console.log('build-web: wrote dist/');
