// A hybrid model's cache in the colocated vLLM (issue 49: "a hybrid model's per-sequence state"),
// at vLLM 52a31cc: the attention's block raised until a page holds one sequence's recurrent state,
// layers grouped by kind, one pool of blocks; pinned by hand from vLLM's formulas on Qwen3.5-27B,
// Qwen3-Next, Nemotron-Nano-9B-v2 and LFM2-1.2B, the figures a practitioner reads, and what is not
// modelled refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "config_fixtures.hpp"
#include "estimate/rollout.hpp"
#include "hub_configs.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace rollout_hybrid_test {

namespace {

// TRL's GRPOTrainer with LoRA r 16 on a BF16 base (full training in BF16 where LoRA is not
// counted, Nemotron-H's one-part blocks), vLLM colocated at `utilization` over `tp` devices, 8
// sequences of 1,024 tokens, on one H100 (or `tp`).
TrainingSetup grpo(const char* model, double utilization = 0.3, int tp = 1) {
  TrainingSetup setup;
  setup.model_id = model;
  setup.stack = Stack::kHf;
  setup.precision = Precision::kBf16;
  setup.lora_rank =
      resolve_model(setup) != nullptr && one_part_layers(*resolve_model(setup)) ? 0 : 16;
  setup.recompute = Recompute::kFull;
  setup.sequence_length = 1024;
  setup.micro_batch_sequences = 8;
  setup.rollout = Rollout::kVllm;
  setup.rollout_memory_utilization = utilization;
  setup.rollout_tensor_parallel = tp;
  setup.layout.data_parallel = tp;
  return setup;
}

HybridKvCache cache_of(const char* model, int tp = 1) {
  const TrainingSetup setup = grpo(model, 0.3, tp);
  return vllm_hybrid_cache(setup, *resolve_model(setup));
}

}  // namespace

// Qwen3.5-27B: 16 full-attention layers (4 key/value heads of 256) and 48 Gated DeltaNet layers
// (16 key heads and 48 value heads of 128, a convolution of 4), its state in FP32 (the config's
// mamba_ssm_dtype). A token of one attention layer: 2·4·256·2 = 4,096 B. One sequence's state in
// one linear layer: the convolution's (4 − 1)·(2·16·128 + 48·128)·2 = 61,440 B and the delta
// rule's 48·128·128·4 = 3,145,728 B, 3,207,168 B. The block: 16·⌈3,207,168 / (16·4,096)⌉ = 16·49 =
// 784 tokens, a page of 784·4,096 = 3,211,264 B. Groups of 16 layers (the fewer kind's count): 1 of
// attention, 3 of state. A request of 32,768 tokens: ⌈32,768 / 784⌉ + 3 = 45 blocks.
TEST_CASE("rollout hybrid: Qwen3.5-27B's page in vLLM, by hand") {
  const HybridKvCache cache = cache_of("qwen3.5-27b");
  REQUIRE(cache.present());
  CHECK(cache.attention_layers == 16);
  CHECK(cache.state_layers == 48);
  CHECK(cache.attention_token_bytes == 4096);
  CHECK(cache.state_bytes == 61440 + 3145728);
  CHECK(cache.block_tokens == 784);
  CHECK(cache.page_bytes == 3211264);
  CHECK(cache.group_layers == 16);
  CHECK(cache.attention_groups == 1);
  CHECK(cache.state_groups == 3);
  CHECK(cache.block_bytes() == 16.0 * 3211264);
  CHECK(cache.request_blocks(32768) == 45);
  // Over 2 devices each holds half the heads: 2,048 B a token, a state of 1,603,584 B, and the
  // block is 16·⌈1,603,584 / 32,768⌉ = 784 again.
  const HybridKvCache halved = cache_of("qwen3.5-27b", 2);
  CHECK(halved.attention_token_bytes == 2048);
  CHECK(halved.state_bytes == (61440 + 3145728) / 2);
  CHECK(halved.block_tokens == 784);
}

// Qwen3-Next keeps its state in the model's dtype (vLLM reads no mamba_ssm_dtype for it): 3·(2·16·
// 128 + 32·128)·2 + 32·128·128·2 = 1,097,728 B beside 2·2·256·2 = 2,048 B a token, a block of
// 16·⌈1,097,728 / 32,768⌉ = 544. Nemotron-Nano-9B-v2's Mamba-2 (128 heads of 80, 8 groups, a state
// of 128, FP32): 3·(128·80 + 2·8·128)·2 + 128·80·128·4 = 5,316,608 B beside 2·8·128·2 = 4,096 B,
// a block of 16·82 = 1,312; 4 attention layers make groups of 4, the 27 Mamba-2 layers 7 groups
// (the last padded). LFM2-1.2B's short convolution: (3 − 1)·2,048·2 = 8,192 B, under a page of 16
// tokens of 2·8·64·2 = 2,048 B: the block stays 16; 6 attention layers and 10 convolutions, 10 at
// least 1.5·6, group 6.
TEST_CASE("rollout hybrid: Qwen3-Next, Mamba-2 and short-convolution pages, by hand") {
  const HybridKvCache next = cache_of("qwen3-next-80b-a3b");
  CHECK(next.state_bytes == 1097728);
  CHECK(next.attention_token_bytes == 2048);
  CHECK(next.block_tokens == 544);
  const HybridKvCache nemotron = cache_of("nemotron-nano-9b-v2");
  CHECK(nemotron.state_bytes == 5316608);
  CHECK(nemotron.block_tokens == 1312);
  CHECK(nemotron.group_layers == 4);
  CHECK(nemotron.attention_groups == 1);
  CHECK(nemotron.state_groups == 7);
  const HybridKvCache lfm2 = cache_of("lfm2-1.2b");
  CHECK(lfm2.state_bytes == 8192);
  CHECK(lfm2.block_tokens == 16);
  CHECK(lfm2.group_layers == 6);
  CHECK(lfm2.state_groups == 2);
  // A model of attention layers alone keeps the per-token count.
  CHECK_FALSE(cache_of("qwen3-8b").present());
}

// The figures: vLLM's num_blocks, what the share leaves after the weights ÷ a block's bytes; its
// logged tokens, those blocks over one request's at the max model length (131,072 for Nemotron:
// ⌈131,072 / 1,312⌉ + 7 = 107), times that length; the generation's 8 sequences of 1,024 tokens,
// (1 + 7) blocks each, held beside the null block. At 0.22 of the device the weights leave fewer
// than 107 blocks: vLLM does not start, naming the max model length.
TEST_CASE("rollout hybrid: the KV cache in blocks, vLLM's logged tokens, and its startup check") {
  const TrainingSetup setup = grpo("nemotron-nano-9b-v2");
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const RolloutFigures figures = rollout_figures(estimate);
  const double block = 4.0 * 1312 * 4096;  // 4 layers of a 1,312-token page
  CHECK(figures.hybrid.block_bytes() == block);
  CHECK(figures.kv_blocks == std::floor((figures.engine_bytes - figures.weights_bytes) / block));
  CHECK(figures.max_model_length == 131072);
  CHECK(figures.kv_tokens == std::floor(figures.kv_blocks / 107 * 131072));
  CHECK(figures.kv_bytes_per_token == 4.0 * 4096);
  CHECK(figures.starts());
  CHECK(figures.smallest_utilization ==
        doctest::Approx((figures.weights_bytes + (8 * 8 + 1) * block) / figures.share_of_bytes));
  bool said = false;
  for (const std::string& note : estimate.notes) {
    said = said || (note.find("blocks of 1,312 tokens") != std::string::npos &&
                    note.find("27 Mamba-2 layers") != std::string::npos &&
                    note.find("needs 64 blocks: it holds them.") != std::string::npos);
  }
  CHECK(said);

  const RolloutFigures short_of =
      rollout_figures(estimate_memory(grpo("nemotron-nano-9b-v2", 0.22)));
  CHECK(short_of.kv_blocks > 0);
  CHECK(short_of.kv_blocks < 107);
  CHECK(short_of.start_failure == RolloutStartFailure::kMaxModelLength);
}

// Qwen3.5's config names its state's dtype (mamba_ssm_dtype); Nemotron-H's config may
// (mamba_ssm_cache_dtype), FP32 where it does not; another value is refused, naming the key.
TEST_CASE("rollout hybrid: the recurrent state's dtype is read from config.json") {
  std::string qwen = hub_config("qwen3.5-27b");
  CHECK(fixtures::parsed(qwen, true).recurrent_state_fp32);
  const std::string stated = "\"mamba_ssm_dtype\": \"float32\",";
  const std::size_t at = qwen.find(stated);
  REQUIRE(at != std::string::npos);
  std::string bf16 = qwen;
  bf16.replace(at, stated.size(), "\"mamba_ssm_dtype\": \"bfloat16\",");
  CHECK_FALSE(fixtures::parsed(bf16, true).recurrent_state_fp32);
  std::string absent = qwen;
  absent.erase(at, stated.size());
  CHECK_FALSE(fixtures::parsed(absent, true).recurrent_state_fp32);
  std::string automatic = qwen;
  automatic.replace(at, stated.size(), "\"mamba_ssm_dtype\": \"auto\",");
  CHECK_FALSE(fixtures::parsed(automatic, true).recurrent_state_fp32);
  std::string half = qwen;
  half.replace(at, stated.size(), "\"mamba_ssm_dtype\": \"half\",");
  CHECK_FALSE(fixtures::parsed(half, true).recurrent_state_fp32);
  std::string odd = qwen;
  odd.replace(at, stated.size(), "\"mamba_ssm_dtype\": \"int8\",");
  const ConfigParse refused = parse_hf_config(odd, true);
  CHECK(refused.answer.status == Status::kInvalidInput);
  CHECK(refused.answer.message.find("'mamba_ssm_dtype' must be") != std::string::npos);
  CHECK(fixtures::parsed(hub_config("nemotron-nano-9b-v2")).recurrent_state_fp32);
}

TEST_CASE("rollout hybrid: what is not modelled is refused, naming the setting") {
  // SGLang's hybrid state pool.
  TrainingSetup setup = grpo("qwen3.5-27b", 0.5, 2);
  setup.rl_trainer = RlTrainer::kVerl;
  setup.rollout = Rollout::kSglang;
  setup.lora_rank = 0;
  setup.precision = Precision::kBf16Mixed;
  setup.layout.zero_stage = 3;
  const Answer sglang = estimate_memory(setup).answer;
  CHECK(sglang.setting == setting_id::kRollout);
  CHECK(sglang.message.find("mamba pool") != std::string::npos);
  // Kimi Linear: its latent attention's cache and its Kimi Delta Attention's state.
  const Answer kimi = estimate_memory(grpo("kimi-linear-48b-a3b")).answer;
  CHECK(kimi.setting == setting_id::kRollout);
  // Linear heads that vLLM's tensor parallelism does not divide.
  TrainingSetup odd = grpo("qwen3.5-27b", 0.3, 8);
  odd.model_id = kCustomModelId;
  odd.custom_model = *find_preset("qwen3.5-27b");
  odd.custom_model.id = kCustomModelId;
  odd.custom_model.linear_num_key_heads = 12;
  odd.custom_model.linear_num_value_heads = 36;
  const Answer heads = estimate_memory(odd).answer;
  // Mamba-2's 8 groups over 16 devices (Nemotron 3 Nano's 32 heads and 2 key/value heads allow it).
  const Answer groups = estimate_memory(grpo("nemotron3-nano-30b-a3b", 0.3, 16)).answer;
  CHECK(groups.setting == setting_id::kRolloutTensorParallel);
  CHECK(groups.message.find("(64 and 8)") != std::string::npos);
  // A hybrid of Mamba-2 blocks and MLPs without attention: vLLM sizes its cache otherwise.
  TrainingSetup attention_free = grpo("nemotron-nano-9b-v2");
  attention_free.model_id = kCustomModelId;
  attention_free.custom_model = *find_preset("nemotron-nano-9b-v2");
  attention_free.custom_model.id = kCustomModelId;
  std::string& blocks = attention_free.custom_model.hybrid_layers;
  std::replace(blocks.begin(), blocks.end(), 'a', 'F');
  const Answer no_attention = estimate_memory(attention_free).answer;
  CHECK(no_attention.setting == setting_id::kRollout);
  CHECK(no_attention.message.find("no attention layer") != std::string::npos);
  CHECK(heads.setting == setting_id::kRolloutTensorParallel);
  CHECK(heads.message.find("(12 and 36)") != std::string::npos);
}

// Under prefix caching (verl's rollout.enable_prefix_caching, True by default) vLLM caches a Gated
// DeltaNet's state "align", two blocks a request in each state group at most, so a request of
// 32,768 tokens of Qwen3.5-27B takes 42 + 2·3 = 48 blocks; without it, one, 45. Mamba-2's "all" is
// refused; a verl line that turns prefix caching off reads as one block, and a model of attention
// alone reads either way.
TEST_CASE("rollout hybrid: prefix caching holds two blocks of state a group, and one without") {
  TrainingSetup setup = grpo("qwen3.5-27b", 0.5, 2);
  setup.rl_trainer = RlTrainer::kVerl;
  setup.rollout_prefix_caching = true;
  const HybridKvCache cache = vllm_hybrid_cache(setup, *resolve_model(setup));
  CHECK(cache.state_blocks == 2);
  CHECK(cache.block_tokens == 784);
  CHECK(cache.request_blocks(32768) == 48);
  TrainingSetup single = setup;
  single.rollout_prefix_caching = false;
  CHECK(vllm_hybrid_cache(single, *resolve_model(single)).request_blocks(32768) == 45);
  // TRL's colocated vLLM passes none: chosen on there, it is refused by its control; brought on
  // by verl, TRL brings it back off, and says so.
  TrainingSetup trl = setup;
  trl.rl_trainer = RlTrainer::kTrl;
  CHECK(estimate_memory(trl).answer.setting == setting_id::kRolloutPrefixCaching);
  const std::vector<BroughtSetting> brought =
      bring_stack_defaults(trl, [](const std::string&) { return false; });
  REQUIRE(brought.size() == 1);
  CHECK(brought.front().setting_id == setting_id::kRolloutPrefixCaching);
  CHECK(brought.front().text == "off");
  CHECK(brought.front().by == "TRL's GRPOTrainer");
  CHECK_FALSE(trl.rollout_prefix_caching);
  setup.model_id = "nemotron-nano-9b-v2";
  setup.lora_rank = 0;
  setup.layout.zero_stage = 3;  // verl's FSDP actor, FP32 parameters computing in BF16
  setup.precision = Precision::kBf16Mixed;
  setup.expandable_segments = true;
  const Estimate answered = estimate_memory(setup);
  REQUIRE_MESSAGE(answered.answer.ok(), answered.answer.message);
  CHECK(vllm_hybrid_cache(setup, *resolve_model(setup)).state_every_block);
  // Turned off (verl's rollout.enable_prefix_caching=False), Mamba-2's state takes one block a
  // sequence.
  setup.rollout_prefix_caching = false;
  REQUIRE_MESSAGE(estimate_memory(setup).answer.ok(), estimate_memory(setup).answer.message);
  CHECK(vllm_hybrid_cache(setup, *resolve_model(setup)).state_blocks == 1);
  CHECK_FALSE(vllm_hybrid_cache(setup, *resolve_model(setup)).state_every_block);

  const auto verl_line = [](const std::string& model, const std::string& extra) {
    return read_launch_config(
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
        "actor_rollout_ref.model.path=" +
            model +
            " actor_rollout_ref.rollout.name=vllm "
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 "
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 " +
            extra + "\n",
        TrainingSetup{}, LaunchContext{});
  };
  const std::string off = "actor_rollout_ref.rollout.enable_prefix_caching=False";
  const LaunchConfig hybrid = verl_line("Qwen/Qwen3.5-27B", "");
  CHECK(hybrid.setup.rollout_prefix_caching);
  const LaunchConfig hybrid_off = verl_line("Qwen/Qwen3.5-27B", off);
  REQUIRE_MESSAGE(hybrid_off.answer.ok(), hybrid_off.answer.message);
  CHECK_FALSE(hybrid_off.setup.rollout_prefix_caching);
  CHECK(hybrid_off.not_understood.empty());
  CHECK(vllm_hybrid_cache(hybrid_off.setup, *resolve_model(hybrid_off.setup)).state_blocks == 1);
  const LaunchConfig dense = verl_line("Qwen/Qwen3-8B", off);
  CHECK(dense.answer.ok());
  CHECK(dense.not_understood.empty());
}

// Mamba-2 under prefix caching, by hand (vLLM 52a31cc: NemotronH supports Mamba prefix caching,
// so MambaModelConfig caches "all"). NVIDIA-Nemotron-Nano-9B-v2 on one device: a state of
// 3·(128·80 + 2·8·128)·2 + 128·80·128·4 = 5,316,608 B, the attention's 2·8·128·2 = 4,096 B a token,
// so 1,298 tokens of attention a state. "all" aligns the block to the scan's chunks,
// lcm(128, 16) = 128: 128·⌈1,298/128⌉ = 1,408 tokens (without prefix caching 16·⌈1,298/16⌉ =
// 1,312). Four attention layers and 27 Mamba-2 layers: groups of 4, one attention group and seven
// state groups. vLLM budgets a request of 32,768 tokens ⌈32,768/1,408⌉ = 24 blocks in each as it
// starts: 8 × 24 = 192, where without prefix caching it takes 25 + 7 = 32.
TEST_CASE("rollout hybrid: Mamba-2 under prefix caching caches a state every chunk-aligned block") {
  TrainingSetup setup = grpo("nemotron-nano-9b-v2", 0.5, 1);
  setup.lora_rank = 0;
  setup.rl_trainer = RlTrainer::kVerl;
  setup.rollout_prefix_caching = true;
  const ModelShape& shape = *resolve_model(setup);
  CHECK(shape.mamba_chunk_size == 128);
  const HybridKvCache all = vllm_hybrid_cache(setup, shape);
  CHECK(all.state_bytes == 3 * (128 * 80 + 2 * 8 * 128) * 2 + 128 * 80 * 128 * 4.0);
  CHECK(all.attention_token_bytes == 4096);
  CHECK(all.block_tokens == 1408);
  CHECK(all.attention_groups == 1);
  CHECK(all.state_groups == 7);
  CHECK(all.request_blocks(32768) == 8 * 24);
  // Running, a request holds two state blocks a group, the last computed token's and the next;
  // four such sequences beside one prefill of 32,768 tokens, which takes 24 a group at once:
  // 4 × (24 + 14) + 7 × (24 − 2) = 306.
  CHECK(all.running_state_blocks() == 14);
  CHECK(all.running_blocks(32768) == 24 + 14);
  RolloutFigures figures;
  figures.hybrid = all;
  figures.rollout_sequences = 4;
  TrainingSetup generating = setup;
  generating.sequence_length = 32768;
  CHECK(generation_blocks(figures, generating) == 306);
  setup.rollout_prefix_caching = false;
  const HybridKvCache none = vllm_hybrid_cache(setup, shape);
  CHECK(none.block_tokens == 1312);
  CHECK(none.request_blocks(32768) == 25 + 7);
  // A config's chunk_size is read.
  std::string text = hub_config("nemotron3-nano-30b-a3b");
  const std::string given = "\"chunk_size\": 128";
  REQUIRE(text.find(given) != std::string::npos);
  CHECK(fixtures::parsed(text).mamba_chunk_size == 128);
  text.replace(text.find(given), given.size(), "\"chunk_size\": 256");
  CHECK(fixtures::parsed(text).mamba_chunk_size == 256);
}

// The edges: where the kinds' counts are within 1.5 of each other the group is the larger count
// (32 and 32: one group each); Mamba-2's groups raised to the tensor parallelism where it does not
// divide them (1 group over 2 devices: (4 − 1)·(128·80 + 2·2·128)/2·2 + 128/2·80·128·4 =
// 2,653,696 B); a share that does not hold the weights leaves no cache at all.
TEST_CASE("rollout hybrid: even kinds, Mamba-2's padded groups, and no cache at all") {
  TrainingSetup even = grpo("qwen3.5-27b");
  even.model_id = kCustomModelId;
  even.custom_model = *find_preset("qwen3.5-27b");
  even.custom_model.id = kCustomModelId;
  even.custom_model.hybrid_layers = interval_hybrid_layers(64, 2);
  const HybridKvCache halves = vllm_hybrid_cache(even, even.custom_model);
  CHECK(halves.attention_layers == 32);
  CHECK(halves.group_layers == 32);
  CHECK(halves.attention_groups == 1);
  CHECK(halves.state_groups == 1);

  TrainingSetup grouped = grpo("nemotron-nano-9b-v2", 0.3, 2);
  ModelShape one_group = *find_preset("nemotron-nano-9b-v2");
  one_group.linear_num_key_heads = 1;
  CHECK(vllm_hybrid_cache(grouped, one_group).state_bytes == 2653696);

  const RolloutFigures none = rollout_figures(estimate_memory(grpo("qwen3.5-27b")));
  CHECK(none.weights_bytes > none.engine_bytes);
  CHECK(none.start_failure == RolloutStartFailure::kNoCacheMemory);
}

}  // namespace rollout_hybrid_test
