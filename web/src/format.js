// Text for people. Byte counts are formatted by the core (estimator.formatBytes) so that the
// page and the CLI print the same figures; these helpers only word them.

/** "2.1": devices' worth to one decimal, as the plate gives it. */
export function formatWorth(devicesWorth) {
  return Number.isFinite(devicesWorth) ? devicesWorth.toFixed(1) : '—';
}

/** "1 sequence", "3 sequences". */
export function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
