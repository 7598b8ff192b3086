// The breakdown's terms, in stacking order, with their colour, their marks and the core's fields
// they show. The charts, the numbers table and the build's first view share them. Terms marked
// onlyWhenHeld are listed only when the estimate holds some of them.
export const TERMS = Object.freeze([
  { key: 'weightsBytes', perParameterKey: 'weights', label: 'Weights', color: '#2f5f98', marks: 'none' },
  {
    key: 'gradientsBytes',
    perParameterKey: 'gradients',
    label: 'Gradients',
    color: '#7fa7d4',
    marks: 'dots',
  },
  {
    key: 'masterWeightsBytes',
    perParameterKey: 'masterWeights',
    label: 'Master weights',
    color: '#d08a2c',
    marks: 'rising',
  },
  {
    key: 'optimizerStatesBytes',
    perParameterKey: 'optimizerStates',
    label: 'Optimiser states',
    color: '#8a4b22',
    marks: 'cross',
  },
  { key: 'activationsBytes', label: 'Activations', color: '#3d8b57', marks: 'falling' },
  { key: 'logitsBytes', label: 'Logits and loss', color: '#7a5c99', marks: 'rows' },
  // Under a quantised base (QLoRA): the BF16 copy of the layer being dequantised.
  {
    key: 'dequantizationBytes',
    label: 'Dequantised layer (BF16)',
    color: '#5f7684',
    marks: 'columns',
    onlyWhenHeld: true,
  },
  // Under FP8 training (fp8-mixed): the FP8 copies of the linear weights and the scaling factors.
  {
    key: 'fp8WeightsBytes',
    label: 'FP8 weights and scales',
    color: '#9a7b2f',
    marks: 'dots',
    onlyWhenHeld: true,
  },
  // Under a training stack: what the framework holds beyond the terms above, the runtime (CUDA
  // context, NCCL, cuBLAS workspaces) and what the caching allocator keeps reserved.
  { key: 'frameworkBytes', label: 'Framework buffers', color: '#b5523b', marks: 'cross', onlyWhenHeld: true },
  { key: 'runtimeBytes', label: 'Runtime', color: '#6b6b6b', marks: 'none', onlyWhenHeld: true },
  {
    key: 'allocatorCacheBytes',
    label: "Allocator's cache",
    color: '#d9c77a',
    marks: 'rising',
    onlyWhenHeld: true,
  },
]);
