// RL post-training's rollout engine colocated with the trainer (rollout.hpp): vLLM's rule for its
// pools, as TRL's GRPOTrainer and verl make it, and SGLang's, as verl makes it.
//
// Sources: vLLM's v1 worker (vllm/v1/worker/gpu_worker.py, Worker.init_device and
// determine_available_memory; vllm/utils/mem_utils.py, memory_profiling; vllm/v1/
// kv_cache_interface.py, AttentionSpec.page_size_bytes); TRL f2cd5771 (after v1.9.0:
// trl/generation/vllm_generation.py, VLLMGeneration._init_vllm; trl/trainer/grpo_trainer.py,
// GRPOTrainer.__init__; trl/trainer/grpo_config.py); SGLang 0.5 (python/sglang/srt/
// model_executor/model_runner.py, init_torch_distributed: the free memory before its weights load;
// model_runner_kv_cache_mixin.py, profile_max_num_token and init_memory; mem_cache/memory_pool.py,
// ReqToTokenPool) as verl 1dda039b launches it (verl/workers/rollout/sglang_rollout/
// async_sglang_server.py, launch_server).
#include "estimate/rollout.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "estimate/calculation.hpp"
#include "estimate/placement.hpp"
#include "model/units.hpp"
#include "stacks/stack.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/format.hpp"

namespace trainmem {

double device_total_bytes(const TrainingSetup& setup) {
  const Device device = device_of(setup);
  const ReportedMemory reported = reported_memory(device.id);
  return reported.bytes > 0 ? reported.bytes : device.capacity_bytes;
}

// vLLM's requested memory (Worker.init_device): ⌈total_memory × gpu_memory_utilization⌉, of which
// determine_available_memory gives the KV cache what the weights, the profiled forward pass's peak
// and the memory outside PyTorch leave. In TRL's colocated engine these are tensors of the
// trainer's own caching allocator, made before the first step and held through every step (under
// sleep mode, of CuMemAllocator's pool of its own, made for each generation: hf_rollout_phases):
// the profiled activations' share is freed after profiling, so the engine holds a little less
// than its whole share between generations, which is counted whole.
namespace {

// verl's rollout.max_num_seqs, which it passes SGLang as max_running_requests (verl 1dda039b,
// verl/trainer/config/rollout/rollout.yaml).
constexpr double kVerlMaxNumSeqs = 256;

// SGLang's request table (ReqToTokenPool): an int32 row of the context length + 4 for each running
// request and one padding row, made after the KV cache (init_memory) in its memory saver's
// "kv_cache" region; the context length the model config's positions.
double sglang_request_table_bytes(const TrainingSetup& setup, const ModelShape& shape) {
  const double context = shape.max_positions > 0 ? shape.max_positions : setup.sequence_length;
  return 4.0 * (kVerlMaxNumSeqs + 1) * (context + 4);
}

// One attention layer's K and V for one token, in the model's dtype: the device's share of the k
// heads of d, one at least.
double attention_token_bytes(const TrainingSetup& setup, const ModelShape& shape) {
  const double kv_heads =
      std::max(1.0, shape.num_key_value_heads / static_cast<double>(setup.rollout_tensor_parallel));
  return 2.0 * kv_heads * head_dim_of(shape) * kBf16Bytes;
}

// Each layer's K and V, in the model's dtype (the KV cache's "auto"): the device's share of the k
// heads of d a token, one at least (vLLM and SGLang replicate them where tp is above k; SGLang's
// get_cell_size_per_token, heads × (head_dim + v_head_dim) × layers × 2 B, is the same).
double kv_bytes_per_token(const TrainingSetup& setup, const ModelShape& shape) {
  return shape.num_layers * attention_token_bytes(setup, shape);
}

// SGLang's KV cache in whole tokens (profile_max_num_token): what its weights leave of its share,
// mem_fraction_static × the memory free before they loaded (free after − free before × (1 − f)).
double sglang_kv_tokens(const TrainingSetup& setup, const ModelShape& shape, double free_bytes) {
  const double rest =
      setup.rollout_memory_utilization * free_bytes - rollout_weights_bytes(setup, shape);
  return std::max(0.0, std::floor(rest / kv_bytes_per_token(setup, shape)));
}

// vLLM's kernel block alignment: the least block size its attention backends take on CUDA
// (FlashAttention's MultipleOf(16), or 16 of [16, 32, 64] beside an FP32 recurrent state), and its
// default block_size (vllm/platforms/interface.py, _align_hybrid_block_size).
constexpr double kVllmBlockAlignment = 16;

// One request's state in one linear layer, on each of the engine's t devices
// (vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateShapeCalculator, and
// MambaStateDtypeCalculator: the convolution's state in the model's dtype, the recurrent state in
// recurrent_state_fp32): a Gated DeltaNet's convolution over q, k and v, (kernel − 1) ×
// (2·H_k·d_k + H_v·d_v)/t, and its state, H_v/t × d_v × d_k; Mamba-2's convolution over x, B and
// C, (kernel − 1) × (H·P + 2·G·N)/t (G raised to t where t does not divide it:
// extra_groups_for_head_shards), and its state, H/t × P × N; LFM2's convolution alone,
// (conv_L_cache − 1) × conv_dim/t (conv_dim, its configs' hidden size).
double linear_state_bytes(const ModelShape& shape, double t) {
  const double state_element = shape.recurrent_state_fp32 ? kFp32Bytes : kBf16Bytes;
  if (short_conv_mixer(shape)) {
    return (shape.short_conv_kernel - 1.0) * shape.hidden_size / t * kBf16Bytes;
  }
  const double kernel_rows = shape.linear_conv_kernel_dim - 1.0;
  const double key_heads = shape.linear_num_key_heads;
  const double value_heads = shape.linear_num_value_heads;
  const double key_width = shape.linear_key_head_dim;
  const double value_width = shape.linear_value_head_dim;
  if (mamba2_mixer(shape)) {
    const double groups = std::fmod(key_heads, t) == 0 ? key_heads : t;
    return kernel_rows * (value_heads * value_width + 2 * groups * key_width) / t * kBf16Bytes +
           value_heads / t * value_width * key_width * state_element;
  }
  return kernel_rows * (2 * key_heads * key_width + value_heads * value_width) / t * kBf16Bytes +
         value_heads / t * value_width * key_width * state_element;
}

}  // namespace

double HybridKvCache::request_blocks(double tokens) const {
  return attention_groups * std::ceil(tokens / block_tokens) + state_groups * state_blocks;
}

// vLLM 52a31cc (May 2026). A linear layer's page holds one request's state (MambaSpec); vLLM raises
// the attention's
// block size to the least multiple of 16 tokens whose page holds it and pads the state's page to
// the attention's (_align_hybrid_block_size). Layers are grouped by kind, a group the fewer kind's
// count of layers (the larger's where it is under 1.5 times the fewer), the last of a kind padded
// (kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size); a group's layers each have a tensor
// shared by one layer of every group, num_blocks pages each, num_blocks = what is left ÷ page ÷
// group size (get_kv_cache_config_from_groups, get_num_blocks), one pool of block ids for all
// groups. A request takes ⌈tokens / block⌉ blocks in each attention group and one in each state
// group (single_type_kv_cache_manager.py, FullAttentionManager and MambaManager) without prefix
// caching: vLLM's default for hybrids (config/model.py, is_prefix_caching_supported), which TRL
// keeps (it passes no enable_prefix_caching). verl passes rollout.enable_prefix_caching, True by
// default (verl 1dda039b, vllm_async_server.py), under which a Gated DeltaNet's or a short
// convolution's state is cached "align" (models/config.py, MambaModelConfig): the same block, two
// of them a request in each state group at most, the running state's and the one before it
// (MambaManager.remove_skipped_blocks; MambaSpec.max_memory_usage_bytes budgets 2). Mamba-2's
// ("all", a state a chunk-aligned block) is refused under verl (check_rollout).
HybridKvCache vllm_hybrid_cache(const TrainingSetup& setup, const ModelShape& shape) {
  HybridKvCache cache;
  if (!hybrid_linear_attention(shape)) return cache;
  const double t = setup.rollout_tensor_parallel;
  cache.attention_layers = layers_of_kinds_between(shape, 0, shape.num_layers, "Aa");
  cache.state_layers = layers_of_kinds_between(shape, 0, shape.num_layers, "Ll");
  if (cache.attention_layers <= 0 || cache.state_layers <= 0) return cache;
  cache.attention_token_bytes = attention_token_bytes(setup, shape);
  cache.state_bytes = linear_state_bytes(shape, t);
  cache.block_tokens = std::max(
      kVllmBlockAlignment,
      kVllmBlockAlignment *
          std::ceil(cache.state_bytes / (kVllmBlockAlignment * cache.attention_token_bytes)));
  cache.page_bytes = cache.block_tokens * cache.attention_token_bytes;
  const double fewer = std::min(cache.attention_layers, cache.state_layers);
  const double more = std::max(cache.attention_layers, cache.state_layers);
  cache.group_layers = more < 1.5 * fewer ? more : fewer;
  cache.attention_groups = std::ceil(cache.attention_layers / cache.group_layers);
  cache.state_groups = std::ceil(cache.state_layers / cache.group_layers);
  cache.state_blocks = verl_trainer(setup) ? 2 : 1;
  return cache;
}

double verl_startup_bytes(const TrainingSetup& setup, const Breakdown& whole) {
  // Under param_offload verl moves the shards to the host as init_model ends.
  const bool offloaded = setup.offload == Offload::kOptimizerAndWeights;
  const double actor = whole[Term::kWeights] + whole[Term::kMasterWeights];
  // The critic's FP32 shards, made before the actor's and never offloaded (stack_hf.hpp, Critic).
  const ModelShape* shape = setup.critic ? resolve_model(setup) : nullptr;
  const double critic =
      shape != nullptr ? actor * value_model_parameters(*shape) / count_parameters(*shape) : 0;
  return (offloaded ? 0 : actor) + critic + replay::startup_runtime_bytes(setup);
}

double rollout_engine_bytes(const TrainingSetup& setup, double startup_bytes) {
  if (setup.rollout == Rollout::kNone) return 0;
  if (setup.rollout == Rollout::kVllm) {
    return std::ceil(setup.rollout_memory_utilization * device_total_bytes(setup));
  }
  const ModelShape* shape = resolve_model(setup);
  if (shape == nullptr) return 0;
  const double tokens = sglang_kv_tokens(setup, *shape, device_total_bytes(setup) - startup_bytes);
  return rollout_weights_bytes(setup, *shape) + tokens * kv_bytes_per_token(setup, *shape) +
         (tokens > 0 ? sglang_request_table_bytes(setup, *shape) : 0);
}

const char* rollout_engine_name(const TrainingSetup& setup) {
  return setup.rollout == Rollout::kSglang ? "SGLang" : "vLLM";
}

// vLLM loads the checkpoint in its own dtype ("auto": BF16), split over its tensor-parallel
// devices (the embedding and output layer by the vocabulary, the linear layers by their heads and
// widths; the norms, whole on each, are left out).
double rollout_weights_bytes(const TrainingSetup& setup, const ModelShape& shape) {
  return kBf16Bytes * count_parameters(shape) / setup.rollout_tensor_parallel;
}

SyncBuckets verl_sync_buckets(const TrainingSetup& setup, const ModelShape& shape) {
  const double h = shape.hidden_size;
  const double embedding = kFp32Bytes * static_cast<double>(shape.vocab_size) * h;
  const double bucket = kVerlWeightSyncBucketMiB * kMebibyte;
  if (setup.rollout != Rollout::kSglang) return {bucket, 0, embedding};
  // The state dict's tensors in the model's order (a dense model: verl refuses mixtures): the
  // embedding; each layer's Q, K, V and O, its MLP's matrices, and the rest of it (norms, biases)
  // as one; the final norm; the output layer unless tied.
  const ParameterCounts counts = parameter_counts(shape);
  const double d = head_dim_of(shape);
  const double q = shape.num_attention_heads * d;
  const double kv = shape.num_key_value_heads * d;
  const double f = shape.ffn_hidden_size;
  std::vector<double> layer{h * q, h * kv, h * kv, q * h};
  for (int matrix = 0; matrix < (shape.gated_mlp ? 3 : 2); ++matrix) layer.push_back(h * f);
  double matrices = 0;
  for (const double each : layer) matrices += each;
  const double per_layer = (count_parameters(shape) - counts.embedding - counts.position_embedding -
                            counts.output_head - counts.final_norm) /
                           shape.num_layers;
  if (per_layer > matrices) layer.push_back(per_layer - matrices);
  std::vector<double> tensors{counts.embedding + counts.position_embedding};
  for (int index = 0; index < shape.num_layers; ++index) {
    tensors.insert(tensors.end(), layer.begin(), layer.end());
  }
  tensors.push_back(counts.final_norm);
  if (counts.output_head > 0) tensors.push_back(counts.output_head);
  SyncBuckets busiest;
  double sent = 0;
  double filling = 0;
  for (const double parameters : tensors) {
    const double gathered = kFp32Bytes * parameters;
    if (sent + filling + gathered > busiest.sent + busiest.filling + busiest.gathered) {
      busiest = {sent, filling, gathered};
    }
    if (filling + gathered > bucket && filling > 0) {
      sent = filling;
      filling = gathered;
    } else {
      filling += gathered;
    }
  }
  return busiest;
}

bool verl_trainer(const TrainingSetup& setup) {
  return setup.rollout != Rollout::kNone && setup.rl_trainer == RlTrainer::kVerl;
}

namespace {

// A generation's sequences on the device: TRL's generation batch, per_device_train_batch_size ×
// steps_per_generation (gradient_accumulation_steps by default: the micro-batches a step), of
// each device its engine spans (VLLMGeneration.generate gathers the prompts of its tensor-parallel
// group, and each of its devices generates them all, its share of the heads).
double generation_sequences(const TrainingSetup& setup) {
  // verl's: the step's whole rollout batch, spread over its d / t engines.
  if (verl_trainer(setup) && setup.rollout_batch_sequences > 0) {
    return static_cast<double>(setup.rollout_batch_sequences) * setup.rollout_tensor_parallel /
           setup.layout.data_parallel;
  }
  const double step = pipeline_micro_batches(setup);
  const double steps = std::isfinite(step) ? step : 1;
  return static_cast<double>(setup.micro_batch_sequences) * steps * setup.rollout_tensor_parallel;
}

// The blocks a hybrid's generation takes: each sequence's, prompt and completion.
double generation_blocks(const RolloutFigures& figures, const TrainingSetup& setup) {
  return figures.rollout_sequences * figures.hybrid.request_blocks(setup.sequence_length);
}

// Whether the KV cache holds the whole generation at once (a hybrid's beside the null block).
bool holds_generation(const RolloutFigures& figures, const TrainingSetup& setup) {
  return figures.hybrid.present() ? generation_blocks(figures, setup) <= figures.kv_blocks - 1
                                  : figures.kv_tokens >= figures.rollout_tokens;
}

double held_by_term(const Estimate& estimate, const char* id) {
  for (const StackTerm& term : estimate.stack_terms) {
    if (term.id == id) return term.bytes;
  }
  return 0;
}

// The replayed step's phases (hf_rollout_phases marks verl's weight sync, the generation and the
// log-probabilities, and verl's critic its values and, each mark named "critic …", its update;
// the actor's update is every mark after them): each one's busiest moment and what is reserved
// then, from the step's timeline (as memory_timeline replays it for the page).
std::vector<RolloutPhase> step_phases(const Estimate& estimate, const Calculation& counted) {
  const TrainingSetup& setup = estimate.setup;
  std::vector<RolloutPhase> phases;
  if (verl_trainer(setup)) phases.push_back({"weight sync"});
  for (const char* id : {"generation", "log-probabilities"}) phases.push_back({id});
  const bool critic = setup.critic && verl_trainer(setup);
  if (critic) {
    for (const char* id : {"values", "critic update"}) phases.push_back({id});
  }
  phases.push_back({"update"});
  for (const TimelinePoint& point : replayed_step(counted, setup)) {
    if (point.phase == "start") continue;
    const std::string id =
        critic && point.phase.rfind("critic ", 0) == 0 ? "critic update" : point.phase;
    const auto named = std::find_if(phases.begin(), phases.end(),
                                    [&](const RolloutPhase& phase) { return phase.id == id; });
    RolloutPhase& phase = named != phases.end() ? *named : phases.back();
    phase.allocated_bytes = std::max(phase.allocated_bytes, point.bytes);
    phase.bytes = std::max(phase.bytes, point.reserved_bytes);
  }
  for (RolloutPhase& phase : phases) phase.fits = phase.bytes <= estimate.usable_bytes;
  return phases;
}

// A share of the device to two decimals, rounded the safe way.
std::string share_text(double share, bool up) {
  const double hundredths = up ? std::ceil(share * 100 - 1e-9) : std::floor(share * 100 + 1e-9);
  return shortest_decimal(hundredths / 100);
}

}  // namespace

RolloutFigures rollout_figures(const Estimate& estimate) {
  RolloutFigures figures;
  // The first view's module answers the plate's settings alone, which set no engine
  // (kBeyondThePlate): the engine's figures drop out of it.
  if constexpr (!kBeyondThePlate) return figures;
  const TrainingSetup& setup = estimate.setup;
  const ModelShape* resolved = resolve_model(setup);
  if (setup.rollout == Rollout::kNone || !estimate.answer.ok() || resolved == nullptr) {
    return figures;
  }
  const ModelShape& shape = *resolved;
  figures.counted = true;
  const bool sglang = setup.rollout == Rollout::kSglang;
  const double total = device_total_bytes(setup);
  // The step's terms as counted, whole: what the trainer holds before its first step.
  const Calculation counted =
      calculate(setup, setup.micro_batch_sequences, setup.flash_attention, {false, false});
  // The trainer's memory when the engine is made. verl makes its servers once every worker has
  // built its models (verl 1dda039b, verl/trainer/ppo/v1/trainer_base.py, _setup: init_model,
  // then LLMServerManager.create) and emptied its cache: the actor's FP32 shards on the device
  // (the reference's on the host), no optimiser state yet (AdamW makes it at the first step),
  // the trainer's CUDA context and NCCL's buffers, and the engine process's own. TRL makes vLLM
  // in GRPOTrainer.__init__, after transformers' Trainer has put the model on the device (one
  // device or DDP) and before any optimiser state or gradient exists: the trainer then holds its
  // weights and the CUDA context; on one device TRL's reference model (beta above 0, full
  // training) is on it too (made before vLLM with device_map "auto", trl/trainer/utils.py,
  // create_model_from_path; under DDP with device_map None, on the host until prepared, after).
  // Under FSDP where the model is then is not derived.
  if (verl_trainer(setup)) {
    figures.startup_bytes = verl_startup_bytes(setup, counted.whole_terms);
  } else if (setup.layout.zero_stage == 0) {
    figures.startup_bytes =
        estimate.bytes[Term::kWeights] + estimate.bytes[Term::kMasterWeights] +
        held_by_term(estimate, "cuda-context") +
        (num_devices(setup.layout) == 1 ? held_by_term(estimate, "reference-model") : 0);
  }
  figures.engine_bytes = rollout_engine_bytes(setup, figures.startup_bytes);
  figures.weights_bytes = rollout_weights_bytes(setup, shape);
  figures.kv_bytes_per_token = kv_bytes_per_token(setup, shape);
  // The memory the engine's share is of: vLLM's, the device's total; SGLang's, what is free as
  // it starts. SGLang's request table is made beyond its share.
  figures.share_of_bytes = sglang ? total - figures.startup_bytes : total;
  figures.beyond_share_bytes = sglang ? sglang_request_table_bytes(setup, shape) : 0;
  figures.kv_tokens =
      sglang ? sglang_kv_tokens(setup, shape, figures.share_of_bytes)
             : std::max(0.0, std::floor((figures.engine_bytes - figures.weights_bytes) /
                                        figures.kv_bytes_per_token));
  // TRL's vllm_max_model_length (verl's max_model_len), else (None) the model config's
  // positions; SGLang's context length, the model config's.
  figures.max_model_length = setup.rollout_max_model_length > 0 ? setup.rollout_max_model_length
                             : shape.max_positions > 0          ? shape.max_positions
                                                                : setup.sequence_length;
  // A hybrid's in blocks (check_rollout refuses SGLang's), and its tokens as vLLM logs them
  // (_report_kv_cache_config: max_concurrency, its blocks over one request's of the max model
  // length, times that length).
  figures.hybrid = sglang ? HybridKvCache{} : vllm_hybrid_cache(setup, shape);
  const HybridKvCache& hybrid = figures.hybrid;
  if (hybrid.present()) {
    figures.kv_bytes_per_token =
        hybrid.attention_groups * hybrid.group_layers * hybrid.attention_token_bytes;
    figures.kv_blocks = std::max(
        0.0, std::floor((figures.engine_bytes - figures.weights_bytes) / hybrid.block_bytes()));
    figures.kv_tokens =
        std::floor(figures.kv_blocks / hybrid.request_blocks(figures.max_model_length) *
                   figures.max_model_length);
  }
  figures.rollout_sequences = generation_sequences(setup);
  figures.rollout_tokens = figures.rollout_sequences * setup.sequence_length;
  figures.phases = step_phases(estimate, counted);
  const double update = figures.phases.back().bytes;
  const double largest = std::max_element(figures.phases.begin(), figures.phases.end(),
                                          [](const RolloutPhase& a, const RolloutPhase& b) {
                                            return a.bytes < b.bytes;
                                          })
                             ->bytes;
  double apart = 0;  // the largest phase but the generation
  for (const RolloutPhase& phase : figures.phases) {
    if (phase.id == "generation") {
      figures.generation_bytes = phase.bytes;
    } else {
      apart = std::max(apart, phase.bytes);
    }
  }
  figures.resident_bytes = figures.generation_bytes - figures.engine_bytes;
  // Asleep, the log-probabilities and the update hold the trainer alone (and verl's weight sync
  // vLLM's weights beside it, whatever its share); awake, every phase holds vLLM's share beside
  // the trainer's.
  figures.trainer_bytes =
      setup.rollout_sleep_mode ? std::max(apart, update) : largest - figures.engine_bytes;
  // vLLM's checks as it starts, in its order. Worker.init_device: the device's free memory at
  // least its share. Then check_enough_kv_cache_memory (vllm/v1/core/kv_cache_utils.py): a KV
  // cache at all ("No available memory for the cache blocks"), and one that serves a request of
  // the max model length. SGLang's share is of the free memory, so only init_memory's: a KV cache
  // at all ("Not enough memory"); a request longer than its cache is refused as it comes.
  if (!sglang && figures.startup_bytes >= 0 &&
      total - figures.startup_bytes < figures.engine_bytes) {
    figures.start_failure = RolloutStartFailure::kFreeMemory;
  } else if (hybrid.present() ? figures.engine_bytes <= figures.weights_bytes
                              : figures.kv_tokens <= 0) {
    figures.start_failure = RolloutStartFailure::kNoCacheMemory;
  } else if (!sglang &&
             (hybrid.present() ? figures.kv_blocks < hybrid.request_blocks(figures.max_model_length)
                               : figures.kv_tokens < figures.max_model_length)) {
    figures.start_failure = RolloutStartFailure::kMaxModelLength;
  }
  // Awake, the engine sits beside the trainer's every phase; asleep, beside what the trainer keeps
  // as it generates, while the log-probabilities and the update must fit on their own.
  const double room = estimate.usable_bytes - figures.beyond_share_bytes;
  const double beside_trainer = !setup.rollout_sleep_mode
                                    ? (room - figures.trainer_bytes) / figures.share_of_bytes
                                : figures.trainer_bytes > estimate.usable_bytes
                                    ? 0
                                    : (room - figures.resident_bytes) / figures.share_of_bytes;
  const double beside_startup =
      sglang || figures.startup_bytes < 0 ? 1 : (total - figures.startup_bytes) / total;
  // Where the trainer's startup leaves SGLang nothing free, no share serves.
  const bool nothing_free = figures.share_of_bytes <= 0;
  figures.largest_utilization =
      nothing_free ? 0 : std::clamp(std::min(beside_trainer, beside_startup), 0.0, 1.0);
  // vLLM starts with one request of its max model length; SGLang serves one sequence.
  const double first_request = sglang ? setup.sequence_length : figures.max_model_length;
  // A hybrid's in blocks, the generation's beside the null block (BlockPool's block 0).
  const double needed =
      figures.weights_bytes + (hybrid.present()
                                   ? hybrid.request_blocks(first_request) * hybrid.block_bytes()
                                   : first_request * figures.kv_bytes_per_token);
  const double generation =
      figures.weights_bytes + (hybrid.present()
                                   ? (generation_blocks(figures, setup) + 1) * hybrid.block_bytes()
                                   : figures.rollout_tokens * figures.kv_bytes_per_token);
  figures.least_starting_utilization = nothing_free ? 2 : needed / figures.share_of_bytes;
  figures.smallest_utilization = nothing_free ? 2 : generation / figures.share_of_bytes;
  return figures;
}

std::string rollout_start_failure(const RolloutFigures& figures, const TrainingSetup& setup) {
  const bool verl = verl_trainer(setup);
  if (setup.rollout == Rollout::kSglang &&
      figures.start_failure == RolloutStartFailure::kNoCacheMemory) {
    if (figures.share_of_bytes <= 0) {
      return "SGLang does not start: the actor's FP32 shards and the CUDA contexts already hold " +
             format_bytes(figures.startup_bytes) + " of the device's " +
             format_bytes(device_total_bytes(setup)) +
             ", leaving nothing free for its weights and KV cache (\"Not enough memory. Please "
             "try to increase --mem-fraction-static\"); shard the actor over more devices.";
    }
    return "SGLang does not start: its share, gpu_memory_utilization " +
           shortest_decimal(setup.rollout_memory_utilization) + " of the " +
           format_bytes(std::max(0.0, figures.share_of_bytes)) +
           " free as it starts (the actor's FP32 shards and the CUDA contexts hold the rest), "
           "does not hold its weights, " +
           format_bytes(figures.weights_bytes) +
           ", and leaves no KV cache (\"Not enough memory. Please try to increase "
           "--mem-fraction-static\").";
  }
  switch (figures.start_failure) {
    case RolloutStartFailure::kFreeMemory:
      return std::string("vLLM does not start: when ") + (verl ? "verl" : "TRL") +
             " makes it the trainer already holds " + format_bytes(figures.startup_bytes) +
             (verl ? " (the actor's FP32 shards and the CUDA contexts)"
                   : " (its weights and the CUDA context)") +
             ", leaving less free than the " + format_bytes(figures.engine_bytes) +
             " it asks for (\"Free memory on device ... is less than desired GPU memory "
             "utilization\").";
    case RolloutStartFailure::kNoCacheMemory:
      return "vLLM does not start: its share, " + format_bytes(figures.engine_bytes) +
             ", does not hold its weights, " + format_bytes(figures.weights_bytes) +
             ", and leaves no KV cache (\"No available memory for the cache blocks\").";
    case RolloutStartFailure::kMaxModelLength:
      return "vLLM does not start: its KV cache of " + format_count(figures.kv_tokens) +
             " tokens cannot serve one request of its max model length, " +
             format_count(figures.max_model_length) +
             " tokens (\"To serve at least one request with the model's max seq len\"); set " +
             (verl ? "verl's actor_rollout_ref.rollout.max_model_len"
                   : "TRL's vllm_max_model_length") +
             " nearer the sequence length, or give vLLM more of the device.";
    case RolloutStartFailure::kNone:
      break;
  }
  return "";
}

namespace {

// Each phase's peak on the device, side by side, and the one that decides: the most reserved, and
// of those the most allocated (awake, the cache an update leaves stays reserved through the next
// generation).
std::string phases_sentence(const RolloutFigures& figures, const Estimate& estimate) {
  std::string text =
      "Each phase of the RL step on each device, its allocated peak (and what is reserved) with "
      "the runtime: ";
  const RolloutPhase* largest = &figures.phases.front();
  std::vector<std::string> over;
  for (const RolloutPhase& phase : figures.phases) {
    const bool first = &phase == &figures.phases.front();
    text += (first                              ? "the "
             : &phase == &figures.phases.back() ? " and the "
                                                : ", the ") +
            phase.id + " " + format_bytes(phase.allocated_bytes) + " (" +
            format_bytes(phase.bytes) + ")";
    if (std::make_pair(phase.bytes, phase.allocated_bytes) >
        std::make_pair(largest->bytes, largest->allocated_bytes)) {
      largest = &phase;
    }
    if (!phase.fits) over.push_back("the " + phase.id);
  }
  text += "; the " + largest->id + " decides";
  const std::string usable = " the " + format_bytes(estimate.usable_bytes) + " usable.";
  if (over.empty()) return text + ", and each fits" + usable;
  std::string named;
  for (std::size_t index = 0; index < over.size(); ++index) {
    named += (index == 0 ? "" : index + 1 == over.size() ? " and " : ", ") + over[index];
  }
  return text + "; " + named + (over.size() == 1 ? " does" : " do") + " not fit" + usable;
}

// The utilizations between which the run works, in one sentence.
std::string utilization_range(const RolloutFigures& figures, const TrainingSetup& setup) {
  const bool sleeping = setup.rollout_sleep_mode;
  const bool sglang = setup.rollout == Rollout::kSglang;
  const double largest = std::floor(figures.largest_utilization * 100 + 1e-9) / 100;
  const double least = std::max(figures.least_starting_utilization, figures.smallest_utilization);
  std::string text =
      largest > 0 ? std::string("The largest gpu_memory_utilization ") +
                        (sglang ? "(SGLang's mem_fraction_static, of the " +
                                      format_bytes(figures.share_of_bytes) + " free as it starts) "
                                : "") +
                        "that leaves the trainer room is " + share_text(largest, false) + "."
      : sleeping ? "No gpu_memory_utilization helps: the trainer alone needs " +
                       format_bytes(figures.trainer_bytes) + "."
                 : "No gpu_memory_utilization leaves the trainer room: it needs " +
                       format_bytes(figures.trainer_bytes) + " beside any engine.";
  const auto least_text = [](double share) {
    return share > 1 ? std::string("more than the whole device") : share_text(share, true);
  };
  text +=
      (sglang ? std::string(" The least whose KV cache holds one sequence beside its weights is ")
              : std::string(" The least with which vLLM starts (its weights and one request of "
                            "its max model length) is ")) +
      least_text(figures.least_starting_utilization) +
      "; the least whose KV cache holds a whole generation, " +
      least_text(figures.smallest_utilization) +
      (largest > 0 && least > largest ? ": none does both." : ".");
  return text;
}

// verl's phases in words (hf_rollout_phases → verl_rollout_phases): the weight sync, sleep mode
// as free_cache_engine runs it, and the log-probability passes and the update over packed tokens.
std::vector<std::string> verl_notes(const RolloutFigures& figures, const Estimate& estimate) {
  const TrainingSetup& setup = estimate.setup;
  const bool sglang = setup.rollout == Rollout::kSglang;
  const std::string engine = rollout_engine_name(setup);
  const std::string bucket = format_count(kVerlWeightSyncBucketMiB) + " MiB";
  std::vector<std::string> notes;
  notes.push_back(
      (setup.rollout_sleep_mode
           ? "verl's weight sync wakes " + engine +
                 "'s weights (its KV cache after) and streams the actor's parameters to them"
           : "verl's weight sync streams the actor's parameters to " + engine +
                 "'s weights, awake through the step") +
      ": FSDP1's sharded state dict gathers each unit "
      "in FP32 (the root unit, the embedding and the output layer, for the whole traversal) and "
      "clones each device's chunks, held to the stream's end; each parameter is then gathered "
      "whole in FP32" +
      (sglang ? ", the gathered tensors kept in buckets of up to " + bucket +
                    " (update_weights_bucket_megabytes) that SGLang maps by CUDA IPC, a larger "
                    "one sent alone."
              : " into a " + bucket +
                    " CUDA-IPC bucket (update_weights_bucket_megabytes), a larger one sent as it "
                    "is."));
  if (setup.rollout_sleep_mode) {
    notes.push_back(
        (sglang ? std::string("Sleep mode (verl's free_cache_engine: SGLang's "
                              "release_memory_occupation of its weights and KV cache, which its "
                              "memory saver unmaps, its weights backed up on the host)")
                : std::string("Sleep mode (verl's free_cache_engine, level 2)")) +
        ": " + engine +
        "'s weights and KV cache are woken for the weight sync and the generation, beside what "
        "the trainer keeps between updates, " +
        (setup.offload == Offload::kOptimizerAndWeights
             ? "the runtime (the actor's FP32 shards and AdamW's state on the host, "
               "param_offload and optimizer_offload, loaded for each phase that uses them)"
         : setup.offload == Offload::kOptimizer
             ? "the actor's FP32 shards and the runtime (AdamW's state on the host, "
               "optimizer_offload, loaded for the update)"
             : "the actor's FP32 shards, AdamW's state and the runtime") +
        (setup.reference_model ? ", and the reference's BF16 root, gathered from its first pass on"
                               : "") +
        " (" + format_bytes(figures.resident_bytes) +
        ", its gradients freed by zero_grad and its cache emptied); the log-probabilities and the "
        "update hold the trainer alone, beside " +
        engine + "'s process. Not counted: what " + engine +
        (sglang ? " keeps asleep (its CUDA graphs and its process's cache)"
                : " keeps asleep (its CUDA graphs' pool, its runner's and sampler's buffers)") +
        ", and expandable segments turned off for the sync (verl turns them back on after).");
  }
  notes.push_back(
      std::string("The log-probabilities are verl's compute_log_prob") +
      (setup.reference_model
           ? " and, with a reference model, compute_ref_log_prob (its units gathered from the "
             "host, where verl keeps its parameters)"
           : "") +
      ", under no_grad a micro-batch at a time: one layer's work at a time (as much as it keeps "
      "with gradients, an upper bound)" +
      (setup.logits
           ? " and the BF16 logits of every packed token, prompt and response, with their "
             "quotient by the temperature (the entropy, compiled, fuses into reductions with no "
             "buffer of that size: not measured). The update is verl's policy loss over the same "
             "logits: flash-attn's cross-entropy writes its gradient in place."
           : ". Both are counted without their logits: count the logits to see them."));
  return notes;
}

// A hybrid's KV cache in words: its blocks, what a block holds, and vLLM's logged tokens.
std::string hybrid_cache_text(const RolloutFigures& figures, const ModelShape& shape) {
  const HybridKvCache& cache = figures.hybrid;
  const std::string block = format_count(cache.block_tokens);
  const double state_blocks = cache.state_groups * cache.state_blocks;
  return "a KV cache of " + format_count(figures.kv_blocks) + " blocks of " + block +
         " tokens, before its profiled forward pass's peak (vLLM's hybrid layout: the attention's "
         "block raised until its page holds a sequence's state): a block holds " +
         block + " tokens of a group of its " + format_count(cache.attention_layers) + " " +
         attention_layers_name(shape) + " (" + format_count(figures.kv_bytes_per_token) +
         " B a token for them all) or one sequence's state in a group of its " +
         format_count(cache.state_layers) + " " + linear_layers_name(shape) +
         " (a sequence's state takes " + format_count(state_blocks) +
         (state_blocks == 1 ? " block, " : " blocks, ") +
         shortest_decimal(std::round(state_blocks * cache.block_bytes() / 1e5) / 10) +
         " MB with their padding" +
         (cache.state_blocks > 1 ? ", two a group under verl's prefix caching: the running "
                                   "state's and the one before it"
                                 : "") +
         "); " + format_count(figures.kv_tokens) + " tokens at its max model length of " +
         format_count(figures.max_model_length) + ", as vLLM logs its size.";
}

std::vector<std::string> rollout_notes(const RolloutFigures& figures, const Estimate& estimate) {
  const TrainingSetup& setup = estimate.setup;
  const ModelShape& shape = *resolve_model(setup);  // rollout_figures counted: it resolves
  std::vector<std::string> notes;
  notes.push_back(phases_sentence(figures, estimate));
  const std::string share = shortest_decimal(setup.rollout_memory_utilization);
  const int tp = setup.rollout_tensor_parallel;
  const std::string split = tp == 1 ? "" : ", split over " + std::to_string(tp) + " devices";
  const bool sglang = setup.rollout == Rollout::kSglang;
  notes.push_back(
      std::string(rollout_engine_name(setup)) + ", colocated at gpu_memory_utilization " + share +
      (sglang ? " (its mem_fraction_static: a share of the " +
                    format_bytes(std::max(0.0, figures.share_of_bytes)) +
                    " free as it starts, which the trainer's startup leaves)"
              : "") +
      split + (verl_trainer(setup) ? " in processes of its own" : "") + ", takes " +
      format_bytes(figures.engine_bytes) +
      (setup.rollout_sleep_mode
           ? " of each device to generate, asleep but for the generation: its BF16 weights ("
           : " of each device, awake through the step: its BF16 weights (") +
      format_bytes(figures.weights_bytes) + (tp == 1 ? "" : " a device") +
      (sglang
           ? "), a KV cache of " + format_count(figures.kv_tokens) + " tokens (" +
                 format_count(figures.kv_bytes_per_token) + " B a token) and its request table (" +
                 format_count(std::round(figures.beyond_share_bytes / 1e6)) + " MB" +
                 "; its activations and CUDA graphs, beyond its share, not counted). A "
                 "generation of "
       : figures.hybrid.present()
           ? ") and " + hybrid_cache_text(figures, shape) + " A generation of "
           : ") and a KV cache of at most " + format_count(figures.kv_tokens) + " tokens (" +
                 format_count(figures.kv_bytes_per_token) +
                 " B a token, before its profiled forward pass's peak). A generation of ") +
      format_count(figures.rollout_sequences) +
      (figures.rollout_sequences == 1 ? " sequence of " : " sequences of ") +
      format_count(setup.sequence_length) + " tokens" +
      (tp == 1 ? "" : " (its " + std::to_string(tp) + " devices' prompts together)") + " needs " +
      (figures.hybrid.present() ? format_count(generation_blocks(figures, setup)) + " blocks"
                                : format_count(figures.rollout_tokens) + " tokens") +
      (!figures.starts()                  ? "."
       : holds_generation(figures, setup) ? ": it holds them."
       : sglang ? ": SGLang holds fewer, and retracts sequences to make room."
                : ": vLLM holds fewer, and preempts sequences to make room."));
  if (!figures.starts()) notes.push_back(rollout_start_failure(figures, setup));
  if (verl_trainer(setup)) {
    for (std::string& note : verl_notes(figures, estimate)) notes.push_back(std::move(note));
    notes.push_back(utilization_range(figures, setup));
    return notes;
  }
  if (setup.rollout_sleep_mode) {
    // trl/generation/vllm_generation.py: empty_cache, wake_up(weights), reload_weights,
    // wake_up(kv_cache), generate, sleep(level=2).
    notes.push_back(
        std::string(
            "Sleep mode (TRL's vllm_enable_sleep_mode, level 2): vLLM wakes for the generation "
            "alone, beside what the trainer keeps between updates, its weights, optimiser state") +
        (held_by_term(estimate, "ddp-gradient-buckets") > 0 ? ", DDP's buckets" : "") +
        " and runtime (" + format_bytes(figures.resident_bytes) +
        ", its gradients freed and its cache emptied); the log-probabilities and the update hold "
        "the trainer alone. Not counted: what vLLM keeps asleep (its CUDA graphs' pool, its "
        "runner's and sampler's "
        "buffers), cache segments empty_cache cannot return, and the weight sync's copies as "
        "vLLM's weights wake before its KV cache.");
  }
  notes.push_back(utilization_range(figures, setup));
  // TRL's _generate_and_score_completions: old_per_token_logps under no_grad, micro-batch by
  // micro-batch (vLLM's importance-sampling correction, on by default), and with beta above 0 the
  // reference model's, not modelled (beta 0, TRL's default, loads none).
  notes.push_back(
      std::string("The log-probabilities are TRL's old_per_token_logps under no_grad, a "
                  "micro-batch at a time: one layer's work at a time (as much as it keeps with "
                  "gradients, an upper bound)") +
      (setup.logits
           ? " and the completions' logits. The update is GRPO's: its layers over whole "
             "sequences, prompt and completion, and its loss over their last " +
                 format_count(setup.completion_length) + " tokens (TRL's max_completion_length)" +
                 (setup.reference_model
                      ? std::string(". With beta above 0 the reference model's log-probabilities "
                                    "follow the policy's, the same pass") +
                            (setup.lora_rank > 0 ? " with the adapters disabled"
                                                 : " over its own copy of the model")
                      : std::string(". With beta 0, TRL's default, there is no reference model"))
           : ". Both are counted without their logits and GRPO's loss over the completions: "
             "count the logits to see them") +
      std::string(figures.startup_bytes < 0
                      ? "; and under FSDP, whether the model is on the device when vLLM starts "
                        "(its free-memory check) is not derived."
                      : "."));
  return notes;
}

}  // namespace

void add_rollout(Estimate& estimate) {
  const RolloutFigures figures = rollout_figures(estimate);
  if (!figures.counted) return;
  for (std::string& note : rollout_notes(figures, estimate)) {
    estimate.notes.push_back(std::move(note));
  }
  if (!figures.starts()) estimate.fits = false;
}

}  // namespace trainmem
