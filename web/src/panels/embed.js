// "Embed this": the <iframe> that shows the current view embedded (embed=1, in the chosen theme),
// and the script that sizes the frame from the height the embedded page posts (readout.js,
// embed()). The frame's address is the view's own, written as url.js writes the address bar; it
// is kept current while the panel is open.
import { $, onOpen } from '../dom.js';
import { viewQuery } from '../url.js';

const FRAME_ID = 'trainmem';
const FRAME_TITLE = 'Where the Memory Goes: the memory to train an LLM';
// Tall enough for the workshop at a laptop's width before the script sizes the frame.
const FRAME_HEIGHT_PX = 1100;

/** `text` as an HTML attribute's value between double quotes: a URL's '&' is not an entity. */
const attribute = (text) => text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;');

export function frameSnippet(src) {
  return (
    `<iframe id="${FRAME_ID}" title="${attribute(FRAME_TITLE)}" sandbox="allow-scripts"\n` +
    `        src="${attribute(src)}"\n` +
    `        style="width: 100%; height: ${FRAME_HEIGHT_PX}px; border: 0"></iframe>`
  );
}

// The embedded page posts {type: 'trainmem:height', height} (readout.js, embed()); only this
// frame's messages are read, since a sandboxed frame's origin is 'null'.
const SIZING_SCRIPT = `<script>
  window.addEventListener('message', (event) => {
    const frame = document.getElementById('${FRAME_ID}');
    if (event.source === frame.contentWindow && event.data && event.data.type === 'trainmem:height') {
      frame.style.height = event.data.height + 'px';
    }
  });
</script>`;

/** Copies a read-only field's text, or selects it for the reader to copy where no clipboard is offered. */
async function copyField(field, status, what) {
  try {
    await navigator.clipboard.writeText(field.value);
    status.textContent = `${what} copied.`;
  } catch {
    field.focus();
    field.select();
    status.textContent = `${what} is selected: press Ctrl+C (⌘C on a Mac) to copy it.`;
  }
}

export function createEmbedPanel({ estimator, store }) {
  const panel = $('embed-this');
  const code = $('embed-code');
  const theme = $('embed-theme');
  const script = $('embed-script');
  script.value = SIZING_SCRIPT;

  const status = $('embed-status');
  // Absolute: the host page is elsewhere. A page opened from file:// gives a file: address, which
  // only this machine can open.
  const note =
    location.protocol === 'file:'
      ? 'This page was opened from a file: copy the folder to a web host and embed its address.'
      : '';
  status.textContent = note;

  const update = (state) => {
    if (!panel.open || state.view === null) return;
    const query = viewQuery(estimator, state, { embedded: true, theme: theme.value });
    const snippet = frameSnippet(new URL(query, location.href).href);
    if (code.value === snippet) return;
    code.value = snippet;
    status.textContent = note; // "copied" was said of the last snippet
  };
  onOpen(panel, () => update(store.get()));
  theme.addEventListener('change', () => update(store.get()));
  store.subscribe(update);

  $('copy-embed').addEventListener('click', () => copyField(code, status, 'The frame'));
  $('copy-embed-script').addEventListener('click', () =>
    copyField(script, $('embed-script-status'), 'The script'),
  );
}
