// Megatron-LM's launch line (`torchrun … pretrain_gpt.py --…`), read into the setup (launch.hpp),
// by megatron/training/arguments.py's flags and defaults (Megatron-LM 23e00ed, core_r0.14.0; the
// MoE, FP8 (with --fp8-param-gather), global-batch, deferred-wgrad, optimizer-instance,
// pipeline-layout, context-parallel exchange, --qk-layernorm, --grad-reduce-in-bf16,
// --empty-unused-memory-level and precision-aware-optimizer flags as of d98e8a6, August 2026): a
// GPT- or Llama-style decoder, dense or a mixture of experts (megatron_model.cpp, written as the
// Llama config.json it is and read by the config reader, so that one reader builds every shape),
// its layout (megatron_layout.cpp), recomputation, precision (BF16, or FP8 under Transformer
// Engine's recipes) and loss, under the megatron stack.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch/command_line.hpp"
#include "launch/key_reader.hpp"
#include "launch/launch_readers.hpp"
#include "launch/megatron_flags.hpp"
#include "trainmem/format.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/models.hpp"

namespace trainmem {

namespace megatron {

namespace {

// The most digits a whole number is read with (10^12 - 1 is far inside a long long) and the most
// characters a number is.
constexpr std::size_t kMaxWholeDigits = 12;
constexpr std::size_t kMaxNumberChars = 24;

}  // namespace

// A flag's value: its text; digits alone as a whole number; or a number, as strtod reads it.
const ValueType<std::string>& flag_text() {
  static const ValueType<std::string> type{
      "text", [](const nlohmann::json& value) { return std::optional(value.get<std::string>()); }};
  return type;
}
const ValueType<long long>& whole_number() {
  static const ValueType<long long> type{
      "a whole number", [](const nlohmann::json& value) -> std::optional<long long> {
        const std::string& text = value.get_ref<const std::string&>();
        if (text.empty() || text.size() > kMaxWholeDigits ||
            text.find_first_not_of("0123456789") != std::string::npos) {
          return std::nullopt;
        }
        return std::stoll(text);
      }};
  return type;
}
const ValueType<double>& decimal_number() {
  static const ValueType<double> type{
      "a number", [](const nlohmann::json& value) -> std::optional<double> {
        const std::string& text = value.get_ref<const std::string&>();
        if (text.empty() || text.size() > kMaxNumberChars ||
            text.find_first_not_of("0123456789.eE-+") != std::string::npos) {
          return std::nullopt;
        }
        return std::strtod(text.c_str(), nullptr);
      }};
  return type;
}

// A whole number within [least, most], refused by its flag outside.
std::optional<long long> bounded(KeyReader& flags, const std::string& flag, long long least,
                                 long long most) {
  const std::optional<long long> value = flags.get(flag, whole_number());
  if (value && !flags.within(flag, *value, least, most)) return std::nullopt;
  return value;
}
// A number, refused where it is not finite (1e999).
std::optional<double> decimal(KeyReader& flags, const std::string& flag) {
  const std::optional<double> value = flags.get(flag, decimal_number());
  if (value && !std::isfinite(*value)) flags.fault(flag, flag + " must be a number.");
  return value;
}

}  // namespace megatron

namespace {

using megatron::bounded;
using megatron::decimal;
using megatron::flag_text;
using megatron::whole_number;

constexpr const char* kMegatronKind = "Megatron-LM launch line (pretrain_gpt.py)";

// The flags read without a value.
const std::set<std::string>& switches() {
  static const std::set<std::string> flags = {"--group-query-attention",
                                              "--multi-latent-attention",
                                              "--swiglu",
                                              "--moe-grouped-gemm",
                                              "--defer-embedding-wgrad-compute",
                                              "--moe-pad-expert-input-to-capacity",
                                              "--fp8-param-gather",
                                              "--reuse-grad-buf-for-mxfp8-param-ag",
                                              "--account-for-embedding-in-pipeline-split",
                                              "--account-for-loss-in-pipeline-split",
                                              "--moe-shared-expert-gate",
                                              "--moe-router-enable-expert-bias",
                                              "--moe-router-pre-softmax",
                                              "--moe-router-fusion",
                                              "--moe-permute-fusion",
                                              "--enable-experimental",
                                              "--disable-bias-linear",
                                              "--add-qkv-bias",
                                              "--qk-layernorm",
                                              "--untie-embeddings-and-output-weights",
                                              "--sequence-parallel",
                                              "--use-distributed-optimizer",
                                              "--use-precision-aware-optimizer",
                                              "--use-megatron-fsdp",
                                              "--init-model-with-meta-device",
                                              "--fsdp-double-buffer",
                                              "--use-nccl-ub",
                                              "--fsdp-manual-registration",
                                              "--megatron-fsdp-max-pool-double-buffer",
                                              "--fsdp-db-use-persist-buf-on-alloc-fail",
                                              "--bf16",
                                              "--fp16",
                                              "--recompute-activations",
                                              "--cross-entropy-loss-fusion",
                                              "--use-flash-attn",
                                              "--use-mcore-models",
                                              "--no-masked-softmax-fusion",
                                              "--no-bias-gelu-fusion",
                                              "--no-bias-dropout-fusion",
                                              "--no-gradient-accumulation-fusion",
                                              "--overlap-grad-reduce",
                                              "--overlap-param-gather",
                                              "--no-load-optim",
                                              "--no-load-rng",
                                              "--no-save-optim",
                                              "--no-save-rng",
                                              "--mock-data",
                                              "--use-rotary-position-embeddings",
                                              "--no-position-embedding",
                                              "--log-throughput",
                                              "--log-timers-to-tensorboard",
                                              "--log-memory-to-tensorboard",
                                              "--log-validation-ppl-to-tensorboard",
                                              "--manual-gc",
                                              "--moe-router-force-load-balancing",
                                              "--auto-detect-ckpt-format",
                                              "--no-rope-fusion",
                                              "--use-torch-fsdp2",
                                              "--apply-layernorm-1p",
                                              "--calculate-per-token-loss",
                                              "--no-create-attention-mask-in-dataloader",
                                              "--no-mmap-bin-files",
                                              "--profile",
                                              "--grad-reduce-in-bf16",
                                              "--log-num-zeros-in-grad",
                                              "--log-params-norm",
                                              "--moe-enable-deepep"};
  return flags;
}

// Flags with no bearing on the device's memory: data, logging, checkpoints, the learning rate and
// its schedule, the optimiser's hyper-parameters, initialisation, timeouts; the router's
// scaling of its probabilities (a product with a number, which saves nothing) and which tokens a
// full expert drops (the capacity is read); and when the gradients'
// and parameters' collectives launch (--overlap-param-gather:
// megatron/core/distributed/param_and_grad_buffer.py allocates each buffer whole either way, and
// the bucket's all-gather runs in place in it; --overlap-grad-reduce is read, its buckets setting
// how a gradient shards, which --log-num-zeros-in-grad's copy follows). Also, as Megatron-LM's own
// examples write them (examples/llama/train_llama3_8b_h100_fp8.sh): the schedule in samples and
// the decoupled learning rate (a parameter group of its own, the same Adam states); the
// tokenizer's pattern; the data loader's workers and files; the profiler's step range (Nsight's
// ranges); RoPE's rotated share (Q and K keep their size); LayerNorm's zero-centred weight
// (--apply-layernorm-1p); the loss's normalisation per token; and the checkpoint's format. From
// NVIDIA's Megatron-FSDP example (examples/megatron_fsdp/train_llama3_8b_fsdp_h100_fp8.sh): the
// NaN check of the loss and gradients (a reduction to a scalar) and the logging level. From its
// DeepSeek-V3 example (examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh): Python's garbage
// collection's interval (--manual-gc-interval), the expert bias's update rate (the bias is there
// either way, --moe-router-enable-expert-bias), the checkpoint's format detection and
// strictness, and --moe-router-force-load-balancing, random router logits of the same shape for
// benchmarks, whose balanced routing is what the estimate assumes anyway.
const std::set<std::string>& megatron_no_bearing() {
  static const std::set<std::string> flags = {"--no-check-for-nan-in-loss-and-grad",
                                              "--logging-level",
                                              "--fp8-margin",
                                              "--fp8-interval",
                                              "--fp8-amax-compute-algo",
                                              "--moe-router-topk-scaling-factor",
                                              "--moe-token-drop-policy",
                                              "--overlap-param-gather",
                                              "--train-iters",
                                              "--train-samples",
                                              "--lr",
                                              "--min-lr",
                                              "--lr-decay-style",
                                              "--lr-decay-iters",
                                              "--lr-warmup-iters",
                                              "--lr-warmup-fraction",
                                              "--weight-decay",
                                              "--clip-grad",
                                              "--adam-beta1",
                                              "--adam-beta2",
                                              "--adam-eps",
                                              "--init-method-std",
                                              "--seed",
                                              "--data-path",
                                              "--split",
                                              "--data-cache-path",
                                              "--save",
                                              "--load",
                                              "--save-interval",
                                              "--eval-interval",
                                              "--eval-iters",
                                              "--log-interval",
                                              "--tensorboard-dir",
                                              "--wandb-project",
                                              "--wandb-exp-name",
                                              "--distributed-backend",
                                              "--distributed-timeout-minutes",
                                              "--tokenizer-model",
                                              "--vocab-file",
                                              "--merge-file",
                                              "--mock-data",
                                              "--use-mcore-models",
                                              "--log-throughput",
                                              "--log-timers-to-tensorboard",
                                              "--log-memory-to-tensorboard",
                                              "--log-validation-ppl-to-tensorboard",
                                              "--tensorboard-log-interval",
                                              "--no-load-optim",
                                              "--no-load-rng",
                                              "--no-save-optim",
                                              "--no-save-rng",
                                              "--rotary-base",
                                              "--rotary-scaling-factor",
                                              "--mscale",
                                              "--mscale-all-dim",
                                              "--mtp-loss-scaling-factor",
                                              "--norm-epsilon",
                                              "--manual-gc",
                                              "--exit-duration-in-mins",
                                              "--rampup-batch-size",
                                              "--attention-softmax-in-fp32",
                                              "--no-rope-fusion",
                                              "--lr-decay-samples",
                                              "--lr-warmup-samples",
                                              "--lr-warmup-init",
                                              "--decoupled-lr",
                                              "--decoupled-min-lr",
                                              "--tiktoken-pattern",
                                              "--num-workers",
                                              "--no-mmap-bin-files",
                                              "--profile",
                                              "--profile-step-start",
                                              "--profile-step-end",
                                              "--profile-ranks",
                                              "--rotary-percent",
                                              "--apply-layernorm-1p",
                                              "--calculate-per-token-loss",
                                              "--ckpt-format",
                                              "--manual-gc-interval",
                                              "--moe-router-bias-update-rate",
                                              "--moe-router-force-load-balancing",
                                              "--auto-detect-ckpt-format",
                                              "--dist-ckpt-strictness"};
  return flags;
}

// --moe-expert-capacity-factor C: each expert's buffer C · T·k/E tokens where
// --moe-pad-expert-input-to-capacity pads it there; without the padding a buffer holds what is
// routed to it up to C times the balanced share, at balanced load the balanced share when C is 1
// or more (dropless, 0) and C of it when C is less (tokens dropped).
// --moe-token-dispatcher-type: alltoall, allgather (Megatron-LM's default,
// TransformerConfig.moe_token_dispatcher_type) or flex over --moe-flex-dispatcher-backend deepep
// (its default; --moe-enable-deepep, deprecated, chooses it too), with the 20 SMs it gives DeepEP
// unless --moe-flex-dispatcher-num-sms (or the deprecated --moe-deepep-num-sms and
// --moe-hybridep-num-sms, which __post_init__ routes there) says otherwise. HybridEP and NCCL EP,
// flex's other backends, are not modelled.
void read_dispatcher(KeyReader& flags, TrainingSetup& setup) {
  const std::string dispatcher =
      flags.get("--moe-token-dispatcher-type", flag_text()).value_or("allgather");
  // --moe-enable-deepep makes the backend deepep, unless it is hybridep (Megatron-LM raises).
  const bool deepep_flag = flags.has("--moe-enable-deepep");
  std::string backend = flags.get("--moe-flex-dispatcher-backend", flag_text()).value_or("deepep");
  if (deepep_flag && backend != "hybridep") backend = "deepep";
  if (dispatcher == "alltoall") {
    setup.moe_dispatcher = MoeDispatcher::kAllToAll;
  } else if (dispatcher == "allgather") {
    setup.moe_dispatcher = MoeDispatcher::kAllGather;
  } else if (dispatcher == "flex") {
    setup.moe_dispatcher = MoeDispatcher::kFlex;
    if (backend != "deepep") {
      flags.fault("--moe-flex-dispatcher-backend",
                  "The flex dispatcher's " + backend.substr(0, 20) +
                      " backend is not modelled: deepep (its default) is.");
    }
    // The SMs: --moe-flex-dispatcher-num-sms, else a deprecated knob's (both alike), else 20.
    const char* chosen = nullptr;
    std::optional<long long> sms;
    for (const char* flag :
         {"--moe-flex-dispatcher-num-sms", "--moe-deepep-num-sms", "--moe-hybridep-num-sms"}) {
      const std::optional<long long> given = flags.get(flag, whole_number());
      if (given && !sms) {
        sms = given;
        chosen = flag;
      } else if (given && chosen != std::string("--moe-flex-dispatcher-num-sms") &&
                 *given != *sms) {
        flags.fault(flag, std::string(flag) + " and " + chosen +
                              " disagree: Megatron-LM refuses conflicting deprecated SM counts.");
      }
    }
    if (sms && *sms != 20) {
      flags.fault(chosen, std::string(chosen) + " " + std::to_string(*sms) +
                              ": DeepEP's buffer is counted for the 20 SMs Megatron-LM gives it "
                              "by default (its channels, and their queues, follow the SMs).");
    }
  } else {
    flags.fault("--moe-token-dispatcher-type",
                "The " + dispatcher.substr(0, 20) +
                    " token dispatcher is not known: --moe-token-dispatcher-type allgather "
                    "(Megatron-LM's default), alltoall and flex are.");
  }
  if (deepep_flag && dispatcher != "flex") {
    flags.fault("--moe-enable-deepep",
                "--moe-enable-deepep needs --moe-token-dispatcher-type flex, as Megatron-LM "
                "requires (TransformerConfig.__post_init__).");
  }
}

void read_capacity(KeyReader& flags, TrainingSetup& setup) {
  const auto factor = decimal(flags, "--moe-expert-capacity-factor");
  const bool padded = flags.has("--moe-pad-expert-input-to-capacity");
  if (!factor) {
    if (padded) {
      flags.fault("--moe-pad-expert-input-to-capacity",
                  "--moe-pad-expert-input-to-capacity pads to a capacity the line does not set "
                  "(--moe-expert-capacity-factor), as Megatron-LM requires.");
    }
    return;
  }
  if (setup.custom_model.num_experts < 2) {
    flags.fault("--moe-expert-capacity-factor",
                "--moe-expert-capacity-factor needs a mixture of experts (--num-experts).");
    return;
  }
  if (!(*factor > 0) || *factor > kMaxCapacityFactor) {
    flags.fault("--moe-expert-capacity-factor",
                "--moe-expert-capacity-factor must be above 0 and at most " +
                    format_count(kMaxCapacityFactor) + ".");
    return;
  }
  setup.capacity_factor = padded || *factor < 1 ? *factor : 0;
  // Unpadded, the router still drops past the capacity and the dispatcher permutes what is kept
  // (megatron_routing.cpp).
  setup.moe_capacity_unpadded = !padded;
}

// --recompute-activations, --recompute-granularity and its method; and selective's modules
// (--recompute-modules, TransformerConfig.recompute_modules at 23e00ed: core_attn when unwritten,
// the core attention, Recompute::kSelective; each other module a switch of its own; a list
// without core_attn recomputes only its modules). Under full recomputation, which does not read
// them, a note says they are ignored.
void read_recompute(KeyReader& flags, TrainingSetup& setup, std::vector<std::string>& notes) {
  // --recompute-activations sets selective whatever the granularity says (validate_args), and so
  // does the deprecated --moe-layer-recompute, which adds moe to the modules
  // (TransformerConfig.__post_init__, refused beside full).
  const std::string given = flags.get("--recompute-granularity", flag_text()).value_or("");
  const bool moe_layer = flags.has("--moe-layer-recompute");
  const bool activations = flags.has("--recompute-activations");
  if (moe_layer && given == "full" && !activations) {
    flags.fault("--moe-layer-recompute",
                "--moe-layer-recompute cannot stand beside full recomputation, as Megatron-LM "
                "requires.");
  }
  const std::string granularity = activations || moe_layer ? "selective" : given;
  if (granularity == "selective") {
    setup.recompute = Recompute::kSelective;
  } else if (granularity == "full") {
    const std::string method = flags.get("--recompute-method", flag_text()).value_or("");
    const long long count = flags.get("--recompute-num-layers", whole_number()).value_or(1);
    if (method != "uniform" || count != 1) {
      flags.fault("--recompute-method",
                  "Full recomputation is read as --recompute-method uniform with "
                  "--recompute-num-layers 1 (every layer's input kept); others are not modelled.");
    }
    setup.recompute = Recompute::kFull;
  } else if (!granularity.empty()) {
    flags.fault("--recompute-granularity", "--recompute-granularity must be full or selective.");
  }
  const auto modules_text = flags.get("--recompute-modules", flag_text());
  setup.recompute_moe = moe_layer;
  if (!modules_text) return;
  const std::vector<std::string> modules = megatron::words_of(*modules_text);
  if (granularity != "selective") {
    notes.push_back(
        "--recompute-modules is selective recomputation's, which the line does not "
        "set: Megatron-LM does not read it, and neither does the estimate.");
    return;
  }
  // The modules written replace the default: without core_attn the attention's core is kept.
  setup.recompute = Recompute::kNone;
  for (const std::string& module : modules) {
    if (module == "core_attn") {
      setup.recompute = Recompute::kSelective;
      continue;
    }
    bool known = false;
    for (const RecomputeModule& each : kRecomputeModules) {
      if (module == each.name) {
        setup.*each.member = true;
        known = true;
      }
    }
    if (!known) {
      // TransformerConfig.__post_init__: "Invalid choices for recompute_modules".
      flags.fault("--recompute-modules",
                  "--recompute-modules " + module.substr(0, 20) +
                      " is not one of Megatron-LM's modules: core_attn, moe_act, layernorm, "
                      "mla_up_proj, mlp, moe and shared_experts are.");
      return;
    }
  }
  if (modules.empty() && !moe_layer) {
    notes.push_back(
        "--recompute-modules lists no module: Megatron-LM recomputes nothing, and so does the "
        "estimate.");
  }
  // TransformerConfig.__post_init__'s refusals.
  if (setup.recompute_moe_act && !flags.has("--moe-grouped-gemm")) {
    flags.fault("--recompute-modules",
                "--recompute-modules moe_act needs --moe-grouped-gemm, as Megatron-LM requires.");
  }
  if (setup.recompute_shared_experts && flags.find("--moe-shared-expert-overlap") != nullptr &&
      flags.find("--moe-shared-expert-intermediate-size") != nullptr) {
    flags.fault("--recompute-modules",
                "--recompute-modules shared_experts cannot stand beside "
                "--moe-shared-expert-overlap, as Megatron-LM requires.");
  }
}

// Dropout, precision, the loss, attention and the optimiser.
// FP8 training (--fp8-format e4m3 or hybrid, both one byte a value) under Transformer Engine's
// recipe (--fp8-recipe, delayed by default; custom is not modelled), its weights
// kept in BF16 beside their FP8 copies, or with --fp8-param-gather FP8 parameters.
void read_fp8(KeyReader& flags, TrainingSetup& setup, std::vector<std::string>& notes) {
  const auto format = flags.get("--fp8-format", flag_text());
  setup.fp8_param_gather = flags.has("--fp8-param-gather");
  const bool reuses_gradients = flags.has("--reuse-grad-buf-for-mxfp8-param-ag");
  if (!format) {
    if (reuses_gradients) {
      flags.fault("--reuse-grad-buf-for-mxfp8-param-ag",
                  "--reuse-grad-buf-for-mxfp8-param-ag is MXFP8's with --fp8-param-gather: set "
                  "--fp8-recipe mxfp8 and --fp8-param-gather, or remove it.");
    }
    // transformer_config.py: "fp8_param must be used together with fp8 mode".
    if (setup.fp8_param_gather) {
      flags.fault("--fp8-param-gather",
                  "--fp8-param-gather makes FP8 parameters, which Megatron-LM builds under FP8 "
                  "training alone: add --fp8-format (e4m3 or hybrid), or remove it.");
    }
    return;
  }
  if (*format != "e4m3" && *format != "hybrid") {
    flags.fault("--fp8-format", "--fp8-format must be e4m3 or hybrid.");
    return;
  }
  const std::string recipe = flags.get("--fp8-recipe", flag_text()).value_or("delayed");
  for (std::size_t index = 0; index < choices<Fp8Recipe>().size(); ++index) {
    if (choices<Fp8Recipe>()[index].id == recipe) {
      setup.fp8_recipe = static_cast<Fp8Recipe>(index);
      setup.precision = Precision::kFp8Mixed;
    }
  }
  if (setup.precision != Precision::kFp8Mixed) {
    flags.fault("--fp8-recipe", "--fp8-recipe " + recipe.substr(0, 20) +
                                    " is not modelled: delayed (the default), tensorwise, "
                                    "mxfp8 or blockwise.");
    return;
  }
  // MXFP8 parameters are gathered through the gradient buffer (param_and_grad_buffer.py: the
  // shared buffer), which the flag below turns on; without it DDP remaps each parameter's storage
  // into its own buffer, which Transformer Engine refuses for MXFP8 tensors (tensor/utils.py,
  // replace_raw_data: "not supported yet").
  if (setup.fp8_param_gather && setup.fp8_recipe == Fp8Recipe::kMxfp8 && !reuses_gradients) {
    flags.fault("--fp8-param-gather",
                "MXFP8 parameters are gathered through the gradient buffer: add "
                "--reuse-grad-buf-for-mxfp8-param-ag, as Megatron-LM needs with --fp8-recipe "
                "mxfp8 and --fp8-param-gather.");
    return;
  }
  if (reuses_gradients && !(setup.fp8_param_gather && setup.fp8_recipe == Fp8Recipe::kMxfp8)) {
    // distributed_data_parallel_config.py: the reuse needs --fp8-param-gather (and is MXFP8's).
    flags.fault("--reuse-grad-buf-for-mxfp8-param-ag",
                "--reuse-grad-buf-for-mxfp8-param-ag is MXFP8's with --fp8-param-gather: set "
                "--fp8-recipe mxfp8 and --fp8-param-gather, or remove it.");
    return;
  }
  // An amax history keeps one value at least (DelayedScaling's amax_history_len).
  const auto history = bounded(flags, "--fp8-amax-history-len", 1, 1 << 20);
  if (history && static_cast<double>(*history) > kMegatronFp8AmaxHistoryLength &&
      setup.fp8_recipe == Fp8Recipe::kDelayed) {
    const double more = static_cast<double>(*history) - kMegatronFp8AmaxHistoryLength;
    notes.push_back("--fp8-amax-history-len " + std::to_string(*history) +
                    ": the amax histories are counted at Megatron-LM's default, 1 value per FP8 "
                    "tensor; the " +
                    format_count(more) + " more, 4 B for each of a GEMM's 5 FP8 tensors, hold " +
                    format_count(more * kFp8TensorsPerGemm * kFp32Bytes) +
                    " B per FP8 GEMM, left out.");
  }
}

// --use-precision-aware-optimizer (megatron/core/optimizer/__init__.py: Transformer Engine's
// FusedAdam with master_weights and store_param_remainders, OptimizerConfig's default) with both
// moments in BF16 (--exp-avg-dtype, --exp-avg-sq-dtype): the adam-bf16-moments optimiser, each
// FP32 master kept as the 16 bits BF16 drops (states.cpp). Its other dtypes are refused by flag.
void read_precision_aware_optimizer(KeyReader& flags, TrainingSetup& setup) {
  const bool aware = flags.has("--use-precision-aware-optimizer");
  const auto dtype = [&](const char* flag, const char* fallback) {
    return flags.get(flag, flag_text()).value_or(fallback);
  };
  const std::string exp_avg = dtype("--exp-avg-dtype", "fp32");
  const std::string exp_avg_sq = dtype("--exp-avg-sq-dtype", "fp32");
  const std::string main_params = dtype("--main-params-dtype", "fp32");
  const std::string main_grads = dtype("--main-grads-dtype", "fp32");
  if (!aware) return;  // the dtypes are the precision-aware optimiser's alone (arguments.py)
  if (exp_avg != "bf16" || exp_avg_sq != "bf16") {
    flags.fault(exp_avg != "bf16" ? "--exp-avg-dtype" : "--exp-avg-sq-dtype",
                "--use-precision-aware-optimizer is modelled with both moments in BF16 "
                "(--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16); its FP32, FP16 and FP8 states "
                "are not.");
  } else if (main_params != "fp32" || main_grads != "fp32") {
    flags.fault(main_params != "fp32" ? "--main-params-dtype" : "--main-grads-dtype",
                "--use-precision-aware-optimizer is modelled with its FP32 main parameters and "
                "gradients (the defaults); --main-params-dtype fp16 and --main-grads-dtype bf16 "
                "are not.");
  }
  setup.optimizer = Optimizer::kAdamBf16Moments;
}

void read_recipe(KeyReader& flags, TrainingSetup& setup, std::vector<std::string>& notes) {
  // Dropout: Megatron-LM's 0.1 on both unless set; the estimate counts one probability for
  // both.
  const double hidden_dropout = decimal(flags, "--hidden-dropout").value_or(0.1);
  const double attention_dropout = decimal(flags, "--attention-dropout").value_or(0.1);
  if ((hidden_dropout == 0) != (attention_dropout == 0)) {
    flags.fault("--attention-dropout",
                "--hidden-dropout and --attention-dropout are counted "
                "together: set both to 0, or both above.");
  }
  setup.dropout = hidden_dropout > 0 ? Dropout::kOn : Dropout::kOff;

  // The output layer's weight gradient deferred to the step's end (--wgrad-deferral-limit: the
  // first that many micro-batches; 0, the default, all).
  setup.defer_embedding_wgrad = flags.has("--defer-embedding-wgrad-compute");
  // The distributed optimiser's copies (checked against d·c with the setup).
  if (const auto instances =
          bounded(flags, "--num-distributed-optimizer-instances", 1, kMaxParallelDegree)) {
    setup.optimizer_instances = static_cast<int>(*instances);
  }
  const auto limit = bounded(flags, "--wgrad-deferral-limit", 0, kMaxGlobalBatchSequences);
  if (limit && setup.defer_embedding_wgrad) setup.wgrad_deferral_limit = static_cast<int>(*limit);

  // Precision, the loss, attention.
  // The megatron stack replays BF16 mixed precision (its refusal would name the stack, not the
  // line's flag).
  // --grad-reduce-in-bf16: the gradient buffer in BF16 (arguments.py: accumulate and reduce in
  // FP32 otherwise, under --bf16).
  setup.grad_reduce_in_bf16 = flags.has("--grad-reduce-in-bf16");
  setup.log_num_zeros_in_grad = flags.has("--log-num-zeros-in-grad");
  setup.overlap_grad_reduce = flags.has("--overlap-grad-reduce");
  setup.empty_cache_level =
      static_cast<int>(bounded(flags, "--empty-unused-memory-level", 0, 2).value_or(0));
  // The data loader's causal mask, made unless this flag is given (arguments.py,
  // create_attention_mask_in_dataloader).
  setup.no_dataloader_attention_mask = flags.has("--no-create-attention-mask-in-dataloader");
  setup.meta_device_init = flags.has("--init-model-with-meta-device");
  setup.no_gradient_accumulation_fusion = flags.has("--no-gradient-accumulation-fusion");
  if (!flags.has("--bf16")) {
    flags.fault("--bf16",
                "Without --bf16 (or --fp16) Megatron-LM trains in FP32, which its step "
                "is not modelled for: add --bf16.");
  }
  setup.precision = Precision::kBf16Mixed;
  read_fp8(flags, setup, notes);
  if (flags.has("--cross-entropy-loss-fusion")) {
    const std::string impl =
        flags.get("--cross-entropy-fusion-impl", flag_text()).value_or("native");
    setup.loss = impl == "te" ? Loss::kTeFused : Loss::kNativeFused;
    if (impl != "te" && impl != "native") {
      flags.fault("--cross-entropy-fusion-impl",
                  "--cross-entropy-fusion-impl must be native or te.");
    }
  } else {
    setup.loss = Loss::kVocabParallel;
  }
  const std::string backend = flags.get("--attention-backend", flag_text()).value_or("auto");
  setup.flash_attention = backend != "unfused" && backend != "local";
  flags.has("--use-flash-attn");
  if (const auto optimizer = flags.get("--optimizer", flag_text()).value_or("adam");
      optimizer != "adam") {
    flags.fault("--optimizer", "--optimizer " + optimizer + " is not modelled here: adam is.");
  }
  read_precision_aware_optimizer(flags, setup);
}

}  // namespace

LaunchConfig read_megatron_args(const std::string& text, const TrainingSetup& base,
                                const LaunchContext& context) {
  LaunchConfig launch;
  launch.kind = kMegatronKind;
  launch.leaves = left_by_every_file();
  launch.setup = setup_beside(base, launch.leaves);
  const Command command = command_of(text, "pretrain_gpt.py");
  if (!command.problem.empty()) {
    launch.answer = refusal("launch", command.problem);
    return launch;
  }
  std::string problem;
  KeyReader flags(launch, command_line_dialect(),
                  flags_of(command.words, switches(), "pretrain_gpt.py", problem));
  if (!problem.empty()) {
    launch.answer = refusal("launch", problem);
    return launch;
  }
  const std::optional<megatron::LineModel> model = megatron::read_model(flags);
  if (!model) return launch;
  TrainingSetup& setup = launch.setup;
  setup.model_id = kCustomModelId;
  setup.custom_model = model->shape;
  setup.mtp = model->shape.num_mtp_layers > 0;
  setup.stack = Stack::kMegatron;
  setup.logits = true;
  long long world = context.world_size;
  if (world == 0 && command.nproc > 0 && command.nnodes > 0) world = command.nproc * command.nnodes;
  setup.sequence_length = static_cast<int>(model->sequence);
  // validate_args asserts a micro-batch; each figure bounded before it is narrowed.
  const auto micro_batch = bounded(flags, "--micro-batch-size", 1, kMaxMicroBatchSequences);
  if (!micro_batch && flags.ok()) {
    flags.fault("--micro-batch-size", "--micro-batch-size is not given; pretrain_gpt.py needs it.");
  }
  setup.micro_batch_sequences = static_cast<int>(micro_batch.value_or(1));
  setup.make_vocab_size_divisible_by =
      static_cast<int>(bounded(flags, "--make-vocab-size-divisible-by", 1, 1 << 20).value_or(128));
  // The NullTokenizer's end-of-document token joins the vocabulary (tokenizer.py,
  // _NullTokenizer.vocab_size: --vocab-size + 1), before the padding.
  setup.eod_token =
      flags.get("--tokenizer-type", flag_text()).value_or("GPT2BPETokenizer") == "NullTokenizer";
  if (const auto nodes = command.nnodes; nodes < 0 && world == 0) {
    flags.fault("--nnodes",
                "torchrun's --nnodes is a range or not a number: give the world size "
                "(--world-size).");
  }
  megatron::read_layout(flags, world, model->layers, model->sequence, setup.layout);
  megatron::read_megatron_fsdp(flags, setup, launch.notes);
  // --log-params-norm under Megatron-FSDP: calc_dtensor_params_l2_norm reads each local shard in
  // place (multi_tensor_l2norm), scalars alone (training/utils.py at 23e00ed). Elsewhere
  // calc_params_l2_norm makes FP32 copies (of the experts' parameters, all at once, after the
  // step), which the estimate does not replay: the flag is then left not understood.
  if (setup.layout.zero_stage >= 2) flags.has("--log-params-norm");
  // The global batch sets a pipeline's micro-batches a step; without it validate_args makes it
  // the micro-batch times d: one micro-batch a step.
  const auto global = bounded(flags, "--global-batch-size", 1, kMaxGlobalBatchSequences);
  setup.global_batch_sequences =
      global ? static_cast<int>(*global)
             : static_cast<int>(std::min<long long>(
                   static_cast<long long>(setup.micro_batch_sequences) * setup.layout.data_parallel,
                   kMaxGlobalBatchSequences));
  megatron::read_cp_comm_type(flags, model->layers, setup, launch.notes);
  read_dispatcher(flags, setup);
  read_capacity(flags, setup);
  megatron::read_router(flags, setup);
  read_recompute(flags, setup, launch.notes);
  read_recipe(flags, setup, launch.notes);
  if (!flags.ok()) return launch;
  flags.list_unread(megatron_no_bearing());
  const ParallelLayout& layout = setup.layout;
  const long long tpc = static_cast<long long>(layout.tensor_parallel) * layout.pipeline_parallel *
                        layout.context_parallel;
  launch.notes.push_back("The model, " + setup.custom_model.name + ", from the line's shape (" +
                         std::to_string(model->vocabulary) + " tokens before padding).");
  launch.notes.push_back("d " + std::to_string(layout.data_parallel) + ": the world size " +
                         std::to_string(world) + " over t·p·c " + std::to_string(tpc) + ".");
  if (!global) {
    launch.notes.push_back("Global batch " + format_count(setup.global_batch_sequences) +
                           ": --global-batch-size is not given, so Megatron-LM takes the "
                           "micro-batch times d, one micro-batch a step.");
  }
  if (flags.find("--hidden-dropout") == nullptr || flags.find("--attention-dropout") == nullptr) {
    launch.notes.push_back(
        "Dropout as Megatron-LM's default, 0.1, where the line does not set it.");
  }
  // Group-limited routing sends each token to fewer devices, which DeepEP's receive buffer and
  // the rows each device receives would show: counted without the limit, an upper bound.
  if (setup.moe_dispatcher == MoeDispatcher::kFlex && setup.custom_model.num_limited_groups > 0) {
    launch.notes.push_back(
        "--moe-router-group-topk limits the devices each token reaches: DeepEP's receive buffer "
        "and the received rows' routing are counted as if any k of the experts could be chosen, "
        "an upper bound.");
  }
  return launch;
}

}  // namespace trainmem
