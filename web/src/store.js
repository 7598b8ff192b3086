// The page's one store: the setup on view (the core's TrainingSetup), the core's view of it, the
// pinned estimate, and the config.json text behind a custom model. Whatever draws subscribes;
// nothing else on the page keeps state.

/** The plate's slider runs over 1 to 16 sequences; so do its chart and typed tokens. */
export const MAX_MICRO_BATCH_SEQUENCES = 16;

/**
 * @param {object} initial {setup, view, pinned, configText}
 * @returns {{get(): object, set(patch: object, how?: object): void, subscribe(listener): void}}
 */
export function createStore(initial) {
  let state = { setup: null, view: null, pinned: null, configText: null, ...initial };
  const listeners = [];
  return {
    get: () => state,
    /** Replaces what `patch` names and tells every listener, with `how` (e.g. {dragging: true}). */
    set(patch, how = {}) {
      state = { ...state, ...patch };
      for (const listener of listeners) listener(state, how);
    },
    subscribe(listener) {
      listeners.push(listener);
    },
  };
}
