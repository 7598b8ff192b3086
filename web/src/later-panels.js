// The exploration views' panels: the arithmetic, the measured runs, the step's timeline, what saves
// the most, where it fits and the fewest devices. Their code (explore.js) and the module that
// answers them (trainmem-full.js) load when a reader first points at, opens or asks for one; the
// first view needs neither.
import { $, addScript, onOpen } from './dom.js';

let explorePromise = null;

/** The panels' constructors (explore.js), loaded once; a failed load is tried again next time. */
function loadExplore() {
  if (!explorePromise) {
    explorePromise = (globalThis.trainmemExplore ? Promise.resolve() : addScript('explore.js')).then(
      () => globalThis.trainmemExplore,
    );
    explorePromise.catch(() => {
      explorePromise = null;
    });
  }
  return explorePromise;
}

/** Starts loading the panels' code, for a reader about to open one (the module is here already). */
export function preload() {
  loadExplore().catch(() => {});
}

/** The <details> panels, by element id, with the constructor that makes each. */
const DETAILS = Object.freeze([
  ['arithmetic', 'createArithmeticPanel'],
  ['measured', 'createMeasuredPanel'],
  ['timeline', 'createTimelinePanel'],
  ['savings', 'createSavingsPanel'],
  ['where-it-fits', 'createFitMapPanel'],
]);

/**
 * The exploration panels over `context` ({estimator, store, render, showError,
 * createTimelineChart}), each made the first time it is needed. `update(state, how)` redraws those that
 * are open, and the fewest devices' panel once it has been made (it redraws its table once a search
 * has run).
 */
export function createLaterPanels(context) {
  const made = new Map(); // constructor name -> a promise of the panel
  const panel = (create) => {
    if (!made.has(create)) {
      // Made once both its code and the module that answers it are here.
      const making = Promise.all([loadExplore(), context.loadFullTools()]).then(([explore]) =>
        explore[create](context),
      );
      making.catch(() => made.delete(create));
      made.set(create, making);
    }
    return made.get(create);
  };
  const details = DETAILS.map(([id, create]) => ({ element: $(id), status: $(`${id}-status`), create }));
  const show = ({ status, create }, state, how = {}) => {
    if (!made.has(create)) status.textContent = 'Loading…';
    panel(create)
      .then((shown) => shown.update(state, how))
      .catch((error) => {
        status.textContent = `This view could not load (${error.message}); it tries again when a setting changes or when it is opened again.`;
      });
  };
  for (const each of details) onOpen(each.element, () => show(each, context.store.get()));

  const fewest = 'createFewestPanel';
  $('find-fit').addEventListener('click', () =>
    panel(fewest)
      .then((shown) => shown.find())
      .catch((error) => {
        $('fit-summary').textContent = `The search could not load (${error.message}). Try again.`;
      }),
  );
  return {
    /** `how`: the store's word on the change ({dragging: true} while a slider moves). */
    update(state, how = {}) {
      for (const each of details) if (each.element.open) show(each, state, how);
      // A panel that could not be made said so where it was asked for; it is made again then.
      if (made.has(fewest))
        made
          .get(fewest)
          .then((shown) => shown.update(state))
          .catch(() => {});
    },
  };
}
