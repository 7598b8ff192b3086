// How the page draws each memory term: its colour and its marks (chart-parts.js), by the term's id
// in the core's table of terms (terms.hpp), which gives everything else: the order, the labels, the
// keys and when a term is listed. A new term in the core needs its colour here.
export const TERM_STYLES = Object.freeze({
  weights: { color: '#2f5f98', marks: 'none' },
  gradients: { color: '#7fa7d4', marks: 'dots' },
  masterWeights: { color: '#d08a2c', marks: 'rising' },
  optimizerStates: { color: '#8a4b22', marks: 'cross' },
  activations: { color: '#3d8b57', marks: 'falling' },
  logits: { color: '#7a5c99', marks: 'rows' },
  dequantization: { color: '#5f7684', marks: 'columns' },
  fp8Weights: { color: '#9a7b2f', marks: 'dots' },
  framework: { color: '#b5523b', marks: 'cross' },
  rolloutEngine: { color: '#4a8a8c', marks: 'columns' },
  runtime: { color: '#6b6b6b', marks: 'none' },
  allocatorCache: { color: '#d9c77a', marks: 'rising' },
  fp32Gradients: { color: '#4f6f5a', marks: 'none' },
});

/**
 * A term of the core's table with its style: {id, apiKey, label, …, color, marks} (every term has
 * one: tests/node/chart-data.test.mjs).
 */
export const styled = (term) => ({ ...term, ...TERM_STYLES[term.id] });

/** The terms a device holds, in the table's order, styled. */
export const deviceTerms = (terms) => terms.filter((term) => term.onDevice).map(styled);

/**
 * Whether a term is listed (a table's row) for an estimate: one its switch counts while the
 * switch is on (the logits not on a pipeline stage before the last, which holds none: as the
 * readout says them), one held only sometimes where some is held, the others always.
 */
export function listed(term, held, settingTexts, stageRole) {
  if (term.countedBy) {
    const beforeLast = term.part === 'logits' && (stageRole === 'first' || stageRole === 'middle');
    return settingTexts?.[term.countedBy] === 'on' && !beforeLast;
  }
  return !term.listedWhenHeld || held > 0;
}
