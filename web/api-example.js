// An example of the entry point another plate would use (see docs/api.md).
window.trainmem.load().then(async (trainmem) => {
  const setup = { ...trainmem.defaultSetup, modelId: 'llama3-70b' };
  const estimate = trainmem.estimate(setup);
  document.getElementById('result').textContent = estimate.ok
    ? `${estimate.modelName}: ${trainmem.formatBytes(estimate.bytes.totalBytes)} in all`
    : estimate.message;
  // The exploration views answer with promises: they come from trainmem-full.js, which the first
  // of them loads from beside the page.
  try {
    const search = await trainmem.fewestDevices(setup, 1);
    document.getElementById('fewest').textContent = search.ok
      ? `It fits on ${trainmem.formatCount(search.fewestDevices)} × ${search.layouts[0].device.name} at the fewest: ` +
        trainmem.formatLayout(search.layouts[0])
      : search.message;
  } catch (error) {
    document.getElementById('fewest').textContent = `The search could not load (${error.message}).`;
  }
  document.body.dataset.ready = 'true';
});
