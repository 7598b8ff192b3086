// An example of the entry point another plate would use (see docs/api.md).
window.trainmem.load().then((trainmem) => {
  const estimate = trainmem.estimate({ ...trainmem.defaultSetup, modelId: 'llama3-70b' });
  document.getElementById('result').textContent = estimate.ok
    ? `${estimate.modelName}: ${trainmem.formatBytes(estimate.bytes.totalBytes)} in all`
    : estimate.message;
  document.body.dataset.ready = 'true';
});
