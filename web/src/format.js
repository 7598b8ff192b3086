// Text for people. Byte counts are formatted by the core (estimator.formatBytes) so that the
// page and the CLI print the same figures; these helpers only word them.

/** "1 sequence", "3 sequences". */
export function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * "Tokens per micro-batch stays 8,192: 8 sequences of 1,024 tokens." — what the tokens did when
 * the sequence length changed, from the setup now shown.
 */
export function tokensInSequences(estimator, name, verb, { microBatchSequences, sequenceLength }) {
  return (
    `${name} ${verb} ${estimator.formatCount(microBatchSequences * sequenceLength)}: ` +
    `${plural(microBatchSequences, 'sequence')} of ${estimator.formatCount(sequenceLength)} tokens.`
  );
}

/** Brought settings grouped by who brought them, in order: [[by, [{settingId, text}…]]…]. */
export function byWhom(brought) {
  const groups = [];
  for (const each of brought) {
    const last = groups[groups.length - 1];
    if (last && last[0] === each.by) last[1].push(each);
    else groups.push([each.by, [each]]);
  }
  return groups;
}

/** "2", "2.004": bytes per parameter, whole where whole. */
export function formatPerParameter(bytes) {
  if (!Number.isFinite(bytes)) return '—';
  return Number.isInteger(bytes) ? String(bytes) : bytes.toFixed(3);
}
