// The exploration views' panels (explore.js), loaded with the on-demand module when a reader first
// opens one (later-panels.js) or points at one (main.js starts the loading): the arithmetic, the
// measured runs, the step's timeline, what saves the most, where it fits and the fewest devices.
// The first view needs none of their code.
import { createArithmeticPanel } from './panels/arithmetic.js';
import { createFewestPanel } from './panels/fewest.js';
import { createFitMapPanel } from './panels/fit-map.js';
import { createMeasuredPanel } from './panels/measured.js';
import { createSavingsPanel } from './panels/savings.js';
import { createTimelinePanel } from './panels/timeline.js';

globalThis.trainmemExplore = Object.freeze({
  createArithmeticPanel,
  createFewestPanel,
  createFitMapPanel,
  createMeasuredPanel,
  createSavingsPanel,
  createTimelinePanel,
});
