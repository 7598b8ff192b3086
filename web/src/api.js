// The entry point for other plates in the series: the same estimates as this page, from the same
// WebAssembly core. Load trainmem.js, then trainmem-api.js, then:
//
//   const trainmem = await window.trainmem.load();
//   const estimate = trainmem.estimate({ ...trainmem.defaultSetup, modelId: 'llama3-70b' });
//   estimate.ok, estimate.bytes.totalBytes, trainmem.formatBytes(estimate.bytes.totalBytes)
//
// See docs/api.md for every function and field.
import { loadEstimator } from './estimator.js';

globalThis.trainmem = Object.freeze({ load: loadEstimator });
