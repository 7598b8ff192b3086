// Small helpers over the page's DOM; no figures are made here.

export const $ = (id) => document.getElementById(id);

/**
 * Sets `element[property]` to `value` unless it holds it already: a redraw (a slider drag) writes
 * only what changed, and an unchanged write would still restyle the workshop.
 */
export function put(element, property, value) {
  if (element[property] !== value) element[property] = value;
}

/**
 * A text area that takes a file dropped on it, as its file input takes one chosen: `use` gets the
 * File (or nothing), and the area is outlined while a file is over it.
 */
export function takeFiles(area, fileInput, use) {
  fileInput.addEventListener('change', (event) => use(event.target.files[0]));
  area.addEventListener('dragover', (event) => {
    event.preventDefault();
    area.classList.add('dragging');
  });
  area.addEventListener('dragleave', () => area.classList.remove('dragging'));
  area.addEventListener('drop', (event) => {
    event.preventDefault();
    area.classList.remove('dragging');
    use(event.dataTransfer.files[0]);
  });
}

/** Builds a table body from rows of cells: text, or a ready-made element (never HTML). */
export function fillTable(tbody, rows) {
  tbody.replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement('tr');
      cells.forEach((content, index) => {
        const cell = document.createElement(index === 0 ? 'th' : 'td');
        if (index === 0) cell.scope = 'row';
        if (content instanceof Node) cell.append(content);
        else cell.textContent = content;
        tr.append(cell);
      });
      return tr;
    }),
  );
}

/** A button that runs `onClick`; `label` is its accessible name when the text alone is short. */
export function button(text, onClick, label) {
  const element = document.createElement('button');
  element.type = 'button';
  element.textContent = text;
  if (label) element.setAttribute('aria-label', label);
  element.addEventListener('click', onClick);
  return element;
}

/** Saves `href` (a data: or blob: URL) as `filename`. */
export function download(filename, href) {
  const link = document.createElement('a');
  link.href = href;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
}

export function downloadText(filename, type, text) {
  const href = URL.createObjectURL(new Blob([text], { type }));
  download(filename, href);
  setTimeout(() => URL.revokeObjectURL(href), 0);
}

/** Calls `fill` whenever the <details> `panel` opens. */
export function onOpen(panel, fill) {
  panel.addEventListener('toggle', () => panel.open && fill());
}

/** Adds a stylesheet to the page; resolves once it applies, rejects when it cannot load. */
export function addStyle(href) {
  return new Promise((resolve, reject) => {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = href;
    link.onload = resolve;
    link.onerror = () => reject(new Error(`${href} did not load`));
    document.head.append(link);
  });
}

/** Adds a classic script once; resolves when it has run, rejects when it cannot load. */
export function addScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`${src} did not load`));
    document.head.append(script);
  });
}
