// The checks of a setup whose model has DeepSeek Sparse Attention (models.hpp, sparse_attention),
// part of check_setup (check.hpp).
#pragma once

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Under the ideal step, as Megatron-LM trains DSA with its TileLang kernels: FlashAttention on
// (the fused sparse kernels), no dropout on the probabilities, sequence parallelism with t > 1,
// no context parallelism, full training in BF16: the first setting outside that, refused by name
// (torchtitan's per-op policy is refused for latent attention by check.cpp); ok for any other
// model.
Answer check_sparse_attention(const TrainingSetup& setup, const ModelShape& shape);

// Its rule on the plate's settings alone (check_plate_setup's): FlashAttention on.
Answer check_sparse_flash_attention(const ModelShape& shape, const TrainingSetup& setup);

}  // namespace trainmem
