// A setup as its stack runs it (stack_run.hpp).
#include "stacks/stack_run.hpp"

#include <cmath>
#include <string>

#include "stacks/stack_rows.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

namespace {

// The kernels the hf stack's count of a hybrid's mixers assumes transformers runs (mixers.cpp),
// and what it runs without them; empty where the mixer is attention (Gemma 4's global layers).
std::string transformers_mixer_note(const ModelShape& shape) {
  if (global_attention_mixer(shape)) return {};
  if (short_conv_mixer(shape)) {
    return "LFM2's short convolutions are counted on causal-conv1d, which transformers runs where "
           "it is installed; without it nn.Conv1d saves the same two tensors, its output a few "
           "tokens longer.";
  }
  if (mamba2_mixer(shape)) {
    return "Mamba-2's mixers are counted on mamba-ssm's fused mamba_split_conv1d_scan_combined, "
           "which transformers runs only with mamba-ssm and causal-conv1d installed and no cache "
           "built (use_cache=False, as TRL's trainers set it, or gradient checkpointing); a plain "
           "Trainer's forward with the config's use_cache runs the scan unfused and keeps about "
           "2.9 times as much in each mixer, which is not counted.";
  }
  if (lightning_mixer(shape)) {
    return "The lightning-attention layers are counted as transformers' "
           "MiniMaxLightningAttention runs them in PyTorch, without padding (a padded batch "
           "masks q, k and v first, a copy, which is not counted).";
  }
  if (mamba1_mixer(shape)) {
    return "The Mamba layers are counted on causal-conv1d and mamba-ssm's selective_scan_fn, "
           "which transformers runs under the config's use_mamba_kernels (it raises an error "
           "without them); a padded batch keeps 2·d bytes a token less in each (x masked apart), "
           "which is not counted.";
  }
  return std::string("The ") + linear_layers_name(shape) +
         " are counted on fla's chunked kernels and causal-conv1d, which transformers runs where "
         "flash-linear-attention and causal-conv1d are installed; without them it falls back to "
         "PyTorch loops that keep more, which are not counted.";
}

}  // namespace

double padded_vocabulary(const TrainingSetup& setup, double vocabulary) {
  // megatron/training/tokenizer/tokenizer.py: _NullTokenizer.vocab_size is --vocab-size + 1, its
  // end-of-document token, up to Megatron-Core 0.17 (0.18, commit c9dfe34798, drops the + 1);
  // _vocab_size_with_padding rounds up to make_vocab_size_divisible_by ×
  // tensor_model_parallel_size. (A Hugging Face tokenizer's vocabulary is len(tokenizer), which
  // the config's vocab_size stands for here.)
  const double tokens = vocabulary + (setup.eod_token ? 1 : 0);
  const double multiple =
      static_cast<double>(setup.make_vocab_size_divisible_by) * setup.layout.tensor_parallel;
  return std::ceil(tokens / multiple) * multiple;
}

StackRun stack_run(const TrainingSetup& setup, const ModelShape& shape) {
  StackRun run;
  run.setup = setup;
  const StackRow& row = stack_row(setup.stack);
  ParallelLayout& layout = run.setup.layout;
  if (row.drops_lone_sequence_parallel && layout.sequence_parallel && layout.tensor_parallel == 1) {
    layout.sequence_parallel = false;
    run.notes.push_back(
        "Megatron-LM turns sequence parallelism off at tensor parallelism 1 "
        "(arguments.py), so it is counted off.");
  }
  if (row.zero_over_one_rank && layout.zero_stage > 0 &&
      static_cast<double>(layout.data_parallel) * layout.context_parallel == 1) {
    run.notes.push_back(row.one_rank_note);
  }
  if (megatron_fsdp(setup)) {
    run.notes.push_back(
        std::string("ZeRO ") + (layout.zero_stage >= 3 ? "3" : "2") +
        " under Megatron-LM is Megatron-FSDP (--use-megatron-fsdp "
        "--data-parallel-sharding-strategy " +
        (layout.zero_stage >= 3 ? "optim_grads_params, its default" : "optim_grads") +
        ", with --ckpt-format fsdp_dtensor, which Megatron-LM asserts): BF16 main gradients, " +
        (layout.zero_stage >= 3
             ? std::string("each transformer layer gathered for its passes with ") +
                   (!setup.fsdp_double_buffer ? "the next ones prefetched, "
                    : mixes_dense_layers(shape)
                        ? "the next one prefetched, the most numerous layers of one size in two "
                          "slots kept for the run (--fsdp-double-buffer) and the others (a "
                          "mixture's dense layers) allocated for their passes, "
                        : "the next one prefetched, in two slots kept for the run "
                          "(--fsdp-double-buffer), ") +
                   (layout.pipeline_parallel > 1
                        ? "the embedding and output layer gathered for the whole step on the "
                          "stages that hold them, "
                        : "the embedding and output layer gathered for the whole step, ")
             : std::string()) +
        (setup.fp8_param_gather ? "the linear weights' FP8 data sharded and gathered in FP8, "
                                : "") +
        (!setup.fsdp_double_buffer ? "each layer's gradient whole until reduce-scattered, "
         : mixes_dense_layers(shape)
             ? "each layer's gradient whole until reduce-scattered, in one of two slots for "
               "those layers, "
             : "each layer's gradient whole in one of two slots until reduce-scattered, ") +
        "and an FP32 copy of the gradient shard for the optimiser's step." +
        (layout.pipeline_parallel > 1
             ? std::string(" Under 1F1B each stage's micro-batches in flight gather its layers "
                           "and reduce-scatter their gradients each in its own passes.")
             : std::string()) +
        (setup.optimizer_instances > 1
             ? " Its " + std::to_string(setup.optimizer_instances) +
                   " distributed optimiser instances make it hybrid (HSDP: "
                   "mcore_fsdp_adapter.py, enable_hsdp): every state sharded over the d·c / " +
                   std::to_string(setup.optimizer_instances) +
                   " ranks of an instance and whole in each instance "
                   "(--outer-dp-sharding-strategy no_shard, its default), the gradient "
                   "shards all-reduced across the instances in place."
             : std::string()) +
        (setup.grad_reduce_in_bf16 ? std::string(" --grad-reduce-in-bf16 changes nothing there.")
                                   : std::string()));
  }
  // Transformer Engine's attn_forward_func_with_cp runs a2a+p2p as the ring where its all-to-all
  // group is 1 (context_parallel.py).
  if (setup.cp_comm_type == CpCommType::kA2aP2p && layout.context_parallel > 1 &&
      setup.cp_a2a_size == 1) {
    run.notes.push_back(
        "An all-to-all group of 1 (--cp-a2a-size, the first of Megatron-LM's "
        "--hierarchical-context-parallel-sizes) makes a2a+p2p the ring: Transformer Engine runs "
        "it as p2p, and it is counted so.");
  }
  if (row.transformers_modules && hybrid_linear_attention(shape)) {
    const std::string note = transformers_mixer_note(shape);
    if (!note.empty()) run.notes.push_back(note);
  }
  // gpt-oss's experts as transformers runs them in training (GptOssExperts.forward's loop over the
  // experts hit, modeling_gpt_oss.py): mlp1's output (2·f_e, kept by both clamps' views), the
  // clamped gate, its sigmoid, their product, up + 1 and the output, f_e each, 14·f_e B a routed
  // copy, where the count's fused SwiGLU keeps three tensors, 6·f_e B (the torchtitan stack counts
  // its own).
  if (row.transformers_modules && shape.clamped_swiglu && shape.num_experts > 1) {
    const double extra = kBf16Bytes * 4 * routed_expert_width(shape);
    run.notes.push_back(
        "Its experts' clamped SwiGLU (transformers' GptOssExperts: the gate clamped at 7 and up to "
        "±7, (up + 1) · gate · σ(1.702 · gate)) is counted as a fused SwiGLU's three tensors a "
        "routed copy; run op by op it keeps seven, " +
        format_count(extra) + " B more a routed copy (" +
        format_count(extra * shape.num_experts_per_token) + " B a token a layer at top-" +
        std::to_string(shape.num_experts_per_token) + "), which is not counted.");
  }
  if (row.pads_vocabulary) {
    const double padded = padded_vocabulary(setup, shape.vocab_size);
    if (padded != shape.vocab_size) {
      auto built = std::make_shared<ModelShape>(shape);
      built->vocab_size = static_cast<int>(padded);
      const double rows = padded - shape.vocab_size;
      const double matrices = shape.tied_embeddings ? 1 : 2;
      const std::string tokenizer =
          setup.eod_token ? " and the NullTokenizer's end-of-document token" : "";
      const std::string multiple =
          format_count(setup.make_vocab_size_divisible_by) +
          (layout.tensor_parallel > 1
               ? " × tensor parallelism " + std::to_string(layout.tensor_parallel)
               : std::string());
      run.notes.push_back(
          "Megatron-LM pads the vocabulary of " + format_count(shape.vocab_size) + tokenizer +
          " to " + format_count(padded) + " rows, a multiple of " + multiple +
          " (--make-vocab-size-divisible-by): " +
          format_count(rows * shape.hidden_size * matrices) + " parameters more in the " +
          (shape.tied_embeddings ? "tied embedding" : "embedding and output layer") + ", and " +
          format_count(rows) + " more logits per token.");
      run.shape = std::move(built);
    }
  }
  return run;
}

}  // namespace trainmem
