// The exploration views come from the on-demand module (trainmem-full.js), loaded when a reader
// first opens one: an update asks, and fills its panel with the answer once it comes.
/**
 * An update that calls `ask(state, how)` (a promise of the core's answer; `how` says whether a slider
 * is moving) and then `fill(answer, state)`,
 * only for the latest update, so that a slower answer never overwrites a newer one. While the
 * module loads, and if it cannot, `status` says so; the next update (a change, or opening the
 * panel again) tries again.
 */
export function whenAnswered(status, ask, fill) {
  let asked = 0;
  let answeredOnce = false;
  return async (state, how = {}) => {
    asked += 1;
    const mine = asked;
    if (!answeredOnce) status.textContent = 'Loading…';
    let answer;
    try {
      answer = await ask(state, how);
    } catch (error) {
      if (mine === asked) {
        status.textContent = `This view could not load (${error.message}); it tries again when a setting changes or when it is opened again.`;
      }
      return;
    }
    if (mine !== asked) return;
    answeredOnce = true;
    status.textContent = '';
    fill(answer, state);
  };
}
