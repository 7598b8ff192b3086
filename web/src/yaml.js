// The page's YAML parser for launch configs (axolotl's), loaded when a reader first opens the
// launch panel: the npm package yaml, read with the failsafe schema, so every scalar stays a
// string and the core reads each key as the file's own tool coerces it (the CLI does the same
// with yaml-cpp). Sets globalThis.trainmemYaml.
import { parseDocument } from 'yaml';

const MAX_ALIASES = 100;

/** {json, problem}: the first document as JSON text, or what is wrong with its line and column. */
function toJson(text) {
  const document = parseDocument(text, { schema: 'failsafe', uniqueKeys: true });
  const [error] = document.errors;
  if (error) {
    const at = error.linePos?.[0];
    const where = at ? `line ${at.line}, column ${at.col}: ` : '';
    const message = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
    return { json: '', problem: `${where}${message}.` };
  }
  try {
    return { json: JSON.stringify(document.toJS({ maxAliasCount: MAX_ALIASES }) ?? null), problem: '' };
  } catch (thrown) {
    return { json: '', problem: thrown.message.split('\n')[0] };
  }
}

globalThis.trainmemYaml = { toJson };
