// Each term's arithmetic, with the setup's own numbers written into its formula, and its source.
#include <cmath>
#include <cstdio>

#include "estimate/calculation.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"

namespace trainmem {

namespace {

std::string number(double value) {
  // Whole numbers with separators; fractions to three significant places.
  if (std::trunc(value) == value && std::fabs(value) < 1e15) return format_count(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string state_formula(double bytes_per_parameter, double parameters, double shards,
                          double bytes) {
  std::string formula = number(bytes_per_parameter) + " B × " + number(parameters) + " parameters";
  if (shards > 1) formula += " / " + number(shards) + " ZeRO shards";
  return formula + " = " + format_bytes(bytes);
}

// Under expert parallelism the routed experts' states shard over their own group.
std::string state_formula(double bytes_per_parameter, double parameters, double shards,
                          double expert_parameters, double expert_shards, double bytes) {
  if (expert_parameters == 0 || (shards == 1 && expert_shards == 1) || shards == expert_shards) {
    return state_formula(bytes_per_parameter, parameters, shards, bytes);
  }
  return number(bytes_per_parameter) + " B × (" + number(parameters - expert_parameters) +
         " parameters / " + number(shards) + " ZeRO shards + " + number(expert_parameters) +
         " routed experts' / " + number(expert_shards) +
         (expert_shards == 1 ? " shard" : " shards") +
         " of their data-parallel group) = " + format_bytes(bytes);
}

// Under a stack: what each term above holds at the step's peak where that differs, then each
// term the stack adds and the allocator's cache.
void explain_stack(const Estimate& estimate, std::vector<TermArithmetic>& terms) {
  const MemoryBreakdown& peak = estimate.bytes;
  const std::vector<std::pair<std::string, double>> at_peak = {
      {"weights", peak.weights_bytes},
      {"gradients", peak.gradients_bytes},
      {"masterWeights", peak.master_weights_bytes},
      {"optimizerStates", peak.optimizer_states_bytes},
      {"activations", peak.activations_bytes},
      {"logits", peak.logits_bytes}};
  for (TermArithmetic& term : terms) {
    for (const auto& [id, bytes] : at_peak) {
      if (term.term == id) {
        term.formula += "; at the step's peak, in the allocator's blocks: " + format_bytes(bytes);
      }
    }
  }
  const std::string stack = choices<Stack>()[static_cast<std::size_t>(estimate.setup.stack)].name;
  for (const StackTerm& term : estimate.stack_terms) {
    terms.push_back(
        {"stack-" + term.id, term.label,
         format_bytes(term.bytes) +
             (term.in_allocator ? " at the step's peak" : ", outside PyTorch's caching allocator"),
         stack + ": " + term.source});
  }
  terms.push_back(
      {"allocatorCache", "Allocator's cache",
       "reserved peak " + format_bytes(estimate.peak_reserved_bytes) + " − allocated peak " +
           format_bytes(estimate.peak_allocated_bytes) + " = " +
           format_bytes(peak.allocator_cache_bytes),
       "the step replayed through PyTorch's caching allocator's rules: 512 B rounding, 2 MiB "
       "and 20 MiB segments, best fit and splitting (c10/cuda/CUDACachingAllocator.cpp)"});
}

}  // namespace

std::vector<TermArithmetic> explain_estimate(const TrainingSetup& setup) {
  const Calculation calc =
      calculate_estimate(setup, setup.micro_batch_sequences, setup.flash_attention);
  const Estimate& estimate = calc.estimate;
  if (!estimate.answer.ok()) return {};

  const ModelShape& shape = *calc.shape;
  const ParallelLayout& layout = setup.layout;
  const BytesPerParameter& per = calc.bytes_per_parameter;
  const double parameters = estimate.parameters_on_device;
  const int zero = layout.zero_stage;
  const auto shards = [&](int stage_that_shards) {
    return zero >= stage_that_shards ? calc.zero_shards : 1.0;
  };
  const auto expert_shards = [&](int stage_that_shards) {
    return zero >= stage_that_shards ? calc.expert_zero_shards : 1.0;
  };
  const double expert_parameters =
      calc.last_is_most_loaded ? calc.last.expert_parameters : calc.first.expert_parameters;
  const auto formula = [&](double bytes_per_parameter, int stage_that_shards, double bytes) {
    return state_formula(bytes_per_parameter, parameters, shards(stage_that_shards),
                         expert_parameters, expert_shards(stage_that_shards), bytes);
  };
  const std::string zero_source = "Rajbhandari et al., \"ZeRO\", SC 2020";
  // Each term whole; under a stack, the step's peak may find some of it not yet made or freed.
  const MemoryBreakdown& bytes = calc.whole_terms;

  const StageMemory& stage = calc.last_is_most_loaded ? calc.last : calc.first;
  const bool lora = setup.lora_rank > 0;
  const double trainable = stage.split.trainable;
  const std::string lora_source =
      "Hu et al., \"LoRA\", arXiv:2106.09685: the base is frozen, only the adapters (PEFT's "
      "lora_A, in × r, and lora_B, r × out) train";

  std::vector<TermArithmetic> terms;
  // Each state before offloading: what the device keeps and what moved to the host.
  const HostMemory& host = estimate.host;
  const double weights_before = bytes.weights_bytes + host.weights_bytes;
  const double gradients_before = bytes.gradients_bytes + host.gradients_bytes;
  const double master_before = bytes.master_weights_bytes + host.master_weights_bytes;
  const double optimizer_before = bytes.optimizer_states_bytes + host.optimizer_states_bytes;
  if (lora) {
    // The adapters at the precision's bytes; the frozen base's linear weights at the base's, the
    // rest of the base in BF16.
    std::string weights =
        number(per.weights) + " B × " + number(trainable) + " adapter + " +
        number(calc.base_linear_bytes_per_value) + " B × " + number(stage.split.frozen_linear) +
        " frozen linear" +
        (calc.base_linear_bytes_per_row > 0
             ? " + 4 B × " + number(stage.split.frozen_linear_rows) + " rows' scales"
             : "") +
        " + 2 B × " + number(stage.split.frozen_other) + " other frozen parameters";
    if (shards(3) > 1) weights = "(" + weights + ") / " + number(shards(3)) + " ZeRO shards";
    std::string source = lora_source;
    if (setup.base_weights == BaseWeights::kNf4) {
      source +=
          "; NF4 with double quantisation, 4 + 8/64 + 32/(64·256) bits (Dettmers et al., "
          "\"QLoRA\", arXiv:2305.14314; bitsandbytes' quantize_4bit, blocksize 64)";
    } else if (setup.base_weights == BaseWeights::kInt8) {
      source +=
          "; int8, 1 B per weight and an FP32 scale per output row (bitsandbytes' "
          "Linear8bitLt)";
    }
    terms.push_back({"weights", "Weights", weights + " = " + format_bytes(weights_before), source});
  } else {
    terms.push_back({"weights", "Weights", formula(per.weights, 3, weights_before),
                     zero_source + "; precision " + choice_id(setup.precision)});
  }
  const std::string trained_source =
      lora ? lora_source : zero_source + "; precision " + choice_id(setup.precision);
  // Under LoRA the adapters train (kept to ep = 1, etp = t: one group); otherwise every parameter.
  const auto trained_formula = [&](double bytes_per_parameter, int stage_that_shards,
                                   double state_bytes) {
    return lora ? state_formula(bytes_per_parameter, trainable, shards(stage_that_shards),
                                state_bytes)
                : formula(bytes_per_parameter, stage_that_shards, state_bytes);
  };
  terms.push_back({"gradients", "Gradients", trained_formula(per.gradients, 2, gradients_before),
                   trained_source});
  terms.push_back({"masterWeights", "Master weights",
                   trained_formula(per.master_weights, 1, master_before),
                   "Micikevicius et al., \"Mixed Precision Training\", ICLR 2018"});
  const Choice& optimizer = choices<Optimizer>()[static_cast<std::size_t>(setup.optimizer)];
  const std::string optimizer_source = optimizer.name + ": " + optimizer.source;
  terms.push_back({"optimizerStates", "Optimiser states",
                   trained_formula(per.optimizer_states, 1, optimizer_before), optimizer_source});

  const ActivationsPerLayer& layer = calc.layer;
  const bool full = setup.recompute == Recompute::kFull;
  const bool first_stage = !calc.last_is_most_loaded;
  const double layers = first_stage ? shape.num_layers : calc.layers_per_stage;
  std::string activations = number(layers) + " layers";
  if (first_stage && calc.in_flight_factor != 1) {
    activations += " × " + number(calc.in_flight_factor) + " (interleaved schedule)";
  }
  const bool llama_block = setup.activation_model == ActivationModel::kLlamaBlock;
  activations += " × " + number(layer.tokens_on_device) + " tokens × ";
  if (full) {
    activations += number(shape.hidden_size) + " × " +
                   number(kFullRecomputeBytesPerTokenPerHidden) +
                   (layout.sequence_parallel ? " / " + number(layout.tensor_parallel) : "") +
                   " B + one layer rebuilt (" + format_bytes(layer.recompute_working_bytes) + ")";
  } else if (llama_block) {
    activations += number(layer.saved_bytes_per_token) + " B saved per token";
  } else {
    activations += number(shape.hidden_size) + " × (" + number(layer.replicated_factor) + " + " +
                   number(layer.score_factor) + ") B";
  }
  if (layer.dispatch_bytes > 0) {
    // Expert parallelism's all-to-all: the send and receive buffers of one mixture layer.
    const double capacity = setup.capacity_factor > 0 ? setup.capacity_factor : 1;
    activations += " + one layer's all-to-all buffers, " + number(kAllToAllBuffersInFlight) +
                   " (send and receive) × " + number(layer.tokens_on_device) + " tokens" +
                   (layout.sequence_parallel ? " / " + number(layout.tensor_parallel) : "") +
                   " × " + number(shape.num_experts_per_token) + " experts" +
                   (capacity != 1 ? " × capacity factor " + number(capacity) : "") + " × " +
                   number(shape.hidden_size) + " × 2 B (" + format_bytes(layer.dispatch_bytes) +
                   ")";
  }
  if (bytes.logits_bytes > 0 && layer_working_bytes(layer) > 0) {
    activations += ", less the logits' memory " +
                   std::string(layer.dispatch_bytes > 0 && full ? "they reuse" : "it reuses");
  }
  if (lora) {
    activations += ", each layer's " + number(calc.lora_bytes_per_layer) + " B of adapter " +
                   "intermediates (" + number(layer.tokens_on_device) + " tokens × r " +
                   number(setup.lora_rank) + " × 2 B × " +
                   number(lora_modules_per_token(shape, setup.lora_targets)) + " adapters) in it";
  }
  const double activations_before = bytes.activations_bytes + estimate.host.activations_bytes;
  activations += " = " + format_bytes(activations_before);
  if (setup.offload_activations) {
    activations += "; the device keeps " + number(kOffloadLayersInFlight) +
                   " layers in flight: " + format_bytes(bytes.activations_bytes);
  }
  std::string activations_source = "Korthikanti et al., MLSys 2023, equation 1 and Table 2";
  if (llama_block) {
    activations_source =
        "the Llama block's saved tensors, one by one (docs/activations.md); the layer's input "
        "alone under full recomputation (Chen et al. 2016)";
  } else if (shape.num_experts > 1 &&
             (shape.moe_ffn_hidden_size > 0 || shape.shared_expert_ffn_hidden_size > 0)) {
    activations_source += "; top-" + std::to_string(shape.num_experts_per_token) +
                          " routing and shared experts: section 4.1's MLP share (19) for each "
                          "MLP a token passes through, its 16 scaled by the MLP's width over 4h";
  } else if (shape.num_experts_per_token > 1) {
    activations_source += "; top-" + std::to_string(shape.num_experts_per_token) +
                          " routing: section 4.1's MLP share (19) once more for each expert "
                          "past the first";
  }
  if (transformer_engine_fp8(setup)) {
    activations_source +=
        llama_block
            ? "; under fp8-mixed each linear layer's saved input in FP8, 1 B instead of 2 (the "
              "saved tensors list which)"
            : "; under fp8-mixed the linear layers' saved inputs in FP8, 1 B instead of 2: the "
              "QKV and MLP inputs 2 to 1 each, fc2's input 8 to 4, the output projection's input "
              "2 to 1, or 1 more beside FlashAttention's BF16 output";
    activations_source +=
        " (Transformer Engine's _Linear.forward and _LayerNormMLP.forward: saved_inputmat, ln_out "
        "and act_out quantised; fc1_out, the norms' inputs and FlashAttention's tensors BF16)";
  }
  if (setup.offload_activations) {
    activations_source +=
        "; offloaded as torch.autograd.graph.save_on_cpu and torchtune's "
        "OffloadActivations do";
  }
  if (!llama_block && latent_attention(shape)) {
    activations_source +=
        "; its attention share assumes heads of h/a, which latent attention does not keep: the "
        "llama-block model counts latent attention's tensors";
  }
  if (shape.num_experts > 1 && shape.num_dense_layers > 0) {
    activations_source += "; every layer counted as the larger of a dense and a mixture layer";
  }
  if (layer.dispatch_bytes > 0) {
    activations_source +=
        "; the dispatch's and the combine's all-to-all hold a send and a receive buffer of the "
        "routed copies, BF16, transient, one layer at a time (Megatron-LM's "
        "MoEAlltoAllTokenDispatcher, megatron/core/transformer/moe/token_dispatcher.py)";
  }
  terms.push_back({"activations", "Activations", activations, activations_source});

  if (setup.logits) {
    const std::string logits =
        number(logits_bytes_per_token_per_vocab(setup.loss)) + " B × " +
        number(layer.tokens_on_device) + " tokens × " + number(shape.vocab_size) + " vocabulary" +
        (layout.tensor_parallel > 1 ? " / " + number(layout.tensor_parallel) : "") + " = " +
        format_bytes(bytes.logits_bytes);
    terms.push_back(
        {"logits", "Logits and loss", logits,
         setup.loss == Loss::kVocabParallel
             ? "BF16 logits plus their FP32 copy for Megatron-LM's vocab-parallel cross-entropy"
             : "an unfused cross-entropy over FP32-upcast logits: its saved log-softmax and two "
               "gradients at the loss's backward (measured: tests/data/loss-peak-cpu.json)"});
  }
  if (bytes.dequantization_bytes > 0) {
    const LinearLayers linear = linear_layers(shape);
    terms.push_back(
        {"dequantization", "Dequantised layer",
         "2 B × " + number(linear.largest_weight) + " (the largest linear weight)" +
             (layout.tensor_parallel > 1 ? " / " + number(layout.tensor_parallel) : "") + " = " +
             format_bytes(bytes.dequantization_bytes),
         "bitsandbytes' matmul_4bit and MatMul8bitLt dequantise the frozen weight to BF16 for "
         "the matmul and its backward, one layer at a time"});
  }
  if (transformer_engine_fp8(setup)) {
    std::string fp8 = calc.fp8_weight_copies > 0
                          ? number(calc.fp8_weight_copies) + " × 1 B × " +
                                number(stage.fp8_weights) + " FP8 GEMM weights (" +
                                (calc.fp8_weight_copies == kFp8WeightCopiesTnOnly
                                     ? "each FP8 weight and its transpose"
                                     : "the FP8 weight; no transpose on Blackwell") +
                                ")"
                          : "no FP8 weight copies held under ZeRO-3 (cast per gathered layer)";
    fp8 += " + " + number(kFp8ScalingBytesPerGemm) + " B × " + number(stage.fp8_gemms) +
           " GEMMs' scaling state (" + number(kFp8TensorsPerGemm) + " FP8 tensors × (" +
           number(kFp8AmaxHistoryLength) +
           " amax history + scale + scale_inv) × 4 B) = " + format_bytes(bytes.fp8_weights_bytes);
    terms.push_back(
        {"fp8Weights", "FP8 weights and scales", fp8,
         "Transformer Engine keeps the BF16 parameter and an FP8 copy of each linear weight for "
         "the step, with its transpose where cuBLAS runs only TN FP8 GEMMs (Hopper; "
         "tests/pytorch/test_cpu_offloading.py, _estimate_cached_weight_size), and "
         "DelayedScaling's amax history per FP8 tensor (module/base.py, set_meta_tensor; "
         "amax_history_len 1,024); the router stays BF16. Under ZeRO-3 the weights are cast to "
         "FP8 per gathered layer (torchao's enable_fsdp_float8_all_gather gathers 1 B per weight "
         "instead of 2), transient like the gathered BF16 weights, which this estimate does not "
         "count"});
  }
  if (setup.offload != Offload::kNone || setup.offload_activations) {
    std::string moved = "weights " + format_bytes(host.weights_bytes) + " + gradients " +
                        format_bytes(host.gradients_bytes) + " + master weights " +
                        format_bytes(host.master_weights_bytes) + " + optimiser states " +
                        format_bytes(host.optimizer_states_bytes) + " + activations " +
                        format_bytes(host.activations_bytes);
    if (setup.offload != Offload::kNone) {
      moved += " + FP32 gradients 4 B × " + number(trainable) + " parameters" +
               (shards(1) > 1 ? " / " + number(shards(1)) + " ZeRO shards" : "") + " (" +
               format_bytes(host.fp32_gradients_bytes) + ")";
    }
    terms.push_back(
        {"host", "Host memory", moved + " = " + format_bytes(host.total_bytes),
         "what the device gave up, moved whole, but the " + number(kOffloadLayersInFlight) +
             " layers in flight; the FP32 gradients are the host's own (Ren et al., "
             "\"ZeRO-Offload\", arXiv:2101.06840; DeepSpeed's stage_1_and_2.py cpu_offload)"});
  }
  if (setup.stack != Stack::kIdeal) explain_stack(estimate, terms);
  return terms;
}

}  // namespace trainmem
