// RL post-training's rollout engine colocated with the trainer (rollout.hpp): vLLM's rule for its
// pools, as TRL's GRPOTrainer and verl make it, and SGLang's, as verl makes it; the figures, which
// rollout_notes.cpp says in words.
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
#include <numeric>
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
  const double blocks = std::ceil(tokens / block_tokens);
  return attention_groups * blocks + state_groups * (state_every_block ? blocks : state_blocks);
}

double HybridKvCache::running_state_blocks() const {
  return state_groups * (state_every_block ? 2 : state_blocks);
}

double HybridKvCache::running_blocks(double tokens) const {
  return attention_groups * std::ceil(tokens / block_tokens) + running_state_blocks();
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
// default (verl 1dda039b, vllm_async_server.py; TrainingSetup::rollout_prefix_caching, which
// verl brings), under which a Gated DeltaNet's or a short
// convolution's state is cached "align" (models/config.py, MambaModelConfig): the same block, two
// of them a request in each state group at most, the running state's and the one before it
// (MambaManager.remove_skipped_blocks; MambaSpec.max_memory_usage_bytes budgets 2). Mamba-2's
// (NemotronH supports Mamba prefix caching, so MambaModelConfig makes it "all") caches a state at
// every block, a block of B = c·⌈⌈state / a⌉ / c⌉ tokens with c = lcm(chunk_size, 16), aligned to
// the scan's chunks (_align_hybrid_block_size); vLLM budgets a request ⌈L/B⌉ of them
// (MambaSpec.max_memory_usage_bytes) for its start check and logged size; running, a request
// holds two a group, the block of its last computed token and the next (MambaManager's skipped
// tokens are all but the last computed, freed before each allocation), and a prefill allocates
// its chunk's blocks before freeing them (generation_blocks).
HybridKvCache vllm_hybrid_cache(const TrainingSetup& setup, const ModelShape& shape) {
  HybridKvCache cache;
  if (!hybrid_linear_attention(shape)) return cache;
  const double t = setup.rollout_tensor_parallel;
  cache.attention_layers = layers_of_kinds_between(shape, 0, shape.num_layers, "Aa");
  cache.state_layers = layers_of_kinds_between(shape, 0, shape.num_layers, "Ll");
  if (cache.attention_layers <= 0 || cache.state_layers <= 0) return cache;
  cache.attention_token_bytes = attention_token_bytes(setup, shape);
  cache.state_bytes = linear_state_bytes(shape, t);
  cache.state_every_block = setup.rollout_prefix_caching && mamba2_mixer(shape);
  if (cache.state_every_block) {
    const double chunk =
        std::lcm(std::max(shape.mamba_chunk_size, 1), static_cast<int>(kVllmBlockAlignment));
    cache.block_tokens =
        chunk * std::ceil(std::ceil(cache.state_bytes / cache.attention_token_bytes) / chunk);
  } else {
    cache.block_tokens = std::max(
        kVllmBlockAlignment,
        kVllmBlockAlignment *
            std::ceil(cache.state_bytes / (kVllmBlockAlignment * cache.attention_token_bytes)));
  }
  cache.page_bytes = cache.block_tokens * cache.attention_token_bytes;
  const double fewer = std::min(cache.attention_layers, cache.state_layers);
  const double more = std::max(cache.attention_layers, cache.state_layers);
  cache.group_layers = more < 1.5 * fewer ? more : fewer;
  cache.attention_groups = std::ceil(cache.attention_layers / cache.group_layers);
  cache.state_groups = std::ceil(cache.state_layers / cache.group_layers);
  cache.state_blocks = setup.rollout_prefix_caching && !cache.state_every_block ? 2 : 1;
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

}  // namespace

// The blocks a hybrid's generation takes: each sequence's, prompt and completion, as it runs;
// where Mamba-2's state is cached at every block, one sequence's prefill beside them, allocating a
// block of every block_tokens of it at once (counted at its whole length; vLLM's token budget may
// prefill several sequences in a step, or a long one in chunks).
double generation_blocks(const RolloutFigures& figures, const TrainingSetup& setup) {
  const HybridKvCache& hybrid = figures.hybrid;
  const double prefill =
      hybrid.state_every_block
          ? hybrid.state_groups *
                std::max(0.0, std::ceil(setup.sequence_length / hybrid.block_tokens) - 2)
          : 0;
  return figures.rollout_sequences * hybrid.running_blocks(setup.sequence_length) + prefill;
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

}  // namespace trainmem
