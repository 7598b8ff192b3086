// The entry point for other plates in the series: the same estimates as this page, from the same
// WebAssembly core (the full module, trainmem-full.js, which it loads from beside the page). Load
// trainmem-api.js, then:
//
//   const trainmem = await window.trainmem.load();
//   const estimate = trainmem.estimate({ ...trainmem.defaultSetup, modelId: 'llama3-70b' });
//   estimate.ok, estimate.bytes.totalBytes, trainmem.formatBytes(estimate.bytes.totalBytes)
//
// See docs/api.md for every function and field.
import { loadFullEstimator } from './estimator.js';

globalThis.trainmem = Object.freeze({ load: loadFullEstimator });
