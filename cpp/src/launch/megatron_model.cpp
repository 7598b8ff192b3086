// The Megatron-LM launch line's model (megatron_flags.hpp): its shape from --num-layers,
// --hidden-size and the rest, a mixture of experts (--num-experts and its flags), latent attention
// (--multi-latent-attention) and multi-token prediction (--mtp-num-layers), by Megatron-LM
// 23e00ed's arguments.py (core_r0.14.0), written as the Llama config.json it is and read by the
// config reader, so that one reader builds every shape.
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launch/key_reader.hpp"
#include "launch/megatron_flags.hpp"
#include "trainmem/config.hpp"
#include "trainmem/format.hpp"
#include "trainmem/models.hpp"

namespace trainmem::megatron {

namespace {

// A mixture of experts (--num-experts), as Megatron-LM's MoELayer builds it: E routed experts
// of --moe-ffn-hidden-size (f by default), each gated as the dense MLP is (--swiglu) and biased
// as it is, top --moe-router-topk (2 by default), a router of E x h, a shared expert of
// --moe-shared-expert-intermediate-size with its gate, the router's expert bias; and which
// layers are mixtures (--moe-layer-freq: all, or a list of dense layers first). The experts are
// counted as TE's GroupedLinear behind the all-to-all, all-gather or flex dispatcher
// (read_dispatcher), as the megatron stack replays them: the sequential experts are refused by
// flag.
void read_experts(KeyReader& flags, long long layers, ModelShape& shape) {
  const auto experts = flags.get("--num-experts", whole_number());
  if (!experts) return;
  if (*experts < 2 || *experts > kMaxModelWidth) {
    flags.fault("--num-experts",
                "--num-experts must be 2 to " + format_count(kMaxModelWidth) + ".");
    return;
  }
  const long long top_k = flags.get("--moe-router-topk", whole_number()).value_or(2);
  if (top_k < 1 || top_k > *experts) {
    flags.fault("--moe-router-topk",
                "--moe-router-topk must be 1 to --num-experts (" + std::to_string(*experts) + ").");
    return;
  }
  if (!flags.has("--moe-grouped-gemm")) {
    flags.fault("--moe-grouped-gemm",
                "The experts are counted as Transformer Engine's GroupedLinear "
                "(--moe-grouped-gemm); Megatron-LM's SequentialMLP, without it, is not modelled.");
    return;
  }
  shape.num_experts = static_cast<int>(*experts);
  shape.num_experts_per_token = static_cast<int>(top_k);
  if (const auto width = flags.get("--moe-ffn-hidden-size", whole_number())) {
    if (*width < 1 || *width > kMaxModelWidth) {
      flags.fault("--moe-ffn-hidden-size",
                  "--moe-ffn-hidden-size must be 1 to " + format_count(kMaxModelWidth) + ".");
      return;
    }
    shape.moe_ffn_hidden_size = static_cast<int>(*width);
  }
  if (const auto shared = flags.get("--moe-shared-expert-intermediate-size", whole_number())) {
    if (*shared < 1 || *shared > kMaxModelWidth) {
      flags.fault("--moe-shared-expert-intermediate-size",
                  "--moe-shared-expert-intermediate-size must be 1 to " +
                      format_count(kMaxModelWidth) + ".");
      return;
    }
    shape.shared_expert_ffn_hidden_size = static_cast<int>(*shared);
  }
  shape.shared_expert_gate = flags.has("--moe-shared-expert-gate");
  shape.router_bias = flags.has("--moe-router-enable-expert-bias");
  // Group-limited routing (--moe-router-group-topk with --moe-router-num-groups): the router's
  // mask of each token's unchosen groups (megatron_routing.cpp). Megatron-LM's group_limited_topk
  // views the E scores as groups of E/groups; without --moe-router-group-topk the groups are not
  // read (compute_topk: "if group_topk"), and TransformerConfig asserts the rest.
  const auto groups = flags.get("--moe-router-num-groups", whole_number());
  const auto group_topk = flags.get("--moe-router-group-topk", whole_number());
  if (group_topk && *group_topk != 0) {  // 0 is off, as compute_topk reads it
    if (!groups) {
      flags.fault("--moe-router-group-topk",
                  "--moe-router-group-topk needs --moe-router-num-groups, as Megatron-LM's "
                  "group-limited routing requires.");
      return;
    }
    if (*groups < 1 || *experts % *groups != 0 || *group_topk < 1 || *group_topk > *groups) {
      flags.fault("--moe-router-num-groups",
                  "--moe-router-num-groups must divide --num-experts (" + std::to_string(*experts) +
                      "), and --moe-router-group-topk be 1 to the groups.");
      return;
    }
    shape.num_expert_groups = static_cast<int>(*groups);
    shape.num_limited_groups = static_cast<int>(*group_topk);
  }
  if (shape.shared_expert_gate && shape.shared_expert_ffn_hidden_size == 0) {
    flags.fault("--moe-shared-expert-gate",
                "--moe-shared-expert-gate gates a shared expert, and the line sets none "
                "(--moe-shared-expert-intermediate-size).");
    return;
  }
  // --moe-layer-freq: 1 (every layer), or "([0]*k+[1]*n)", k dense layers first, with or
  // without its parentheses and a count of 1 written or not (arguments.py, moe_freq_type, evaluates
  // the list either way: its docstring's "([0]+[1]*23)", NVIDIA's DeepSeek-V3 examples'
  // [0]*3+[1]*58). _eval_pattern refuses any character but digits, commas, brackets, + and *.
  const std::string frequency = flags.get("--moe-layer-freq", flag_text()).value_or("1");
  if (frequency != "1") {
    std::string compact = frequency;
    if (compact.size() >= 2 && compact.front() == '(' && compact.back() == ')') {
      compact = compact.substr(1, compact.size() - 2);
    }
    // "[d]" or "[d]*count", the count 1 where it is not written.
    const auto run = [](const std::string& text, char digit) -> long long {
      const std::string head = std::string("[") + digit + "]";
      if (text == head) return 1;
      if (text.rfind(head + "*", 0) != 0) return -1;
      const std::string count = text.substr(head.size() + 1);
      if (count.empty() || count.size() > 6 ||
          count.find_first_not_of("0123456789") != std::string::npos) {
        return -1;
      }
      return std::stoll(count);
    };
    const std::size_t plus = compact.find('+');
    const long long dense = plus == std::string::npos ? -1 : run(compact.substr(0, plus), '0');
    const long long mixture = plus == std::string::npos ? -1 : run(compact.substr(plus + 1), '1');
    if (dense < 0 || mixture < 1 || dense + mixture != layers) {
      flags.fault("--moe-layer-freq",
                  "--moe-layer-freq is read as 1 (every layer a mixture) or ([0]*k+[1]*n) with "
                  "k + n the " +
                      std::to_string(layers) + " layers (k dense layers first); '" +
                      frequency.substr(0, 40) + "' is not.");
      return;
    }
    shape.num_dense_layers = static_cast<int>(dense);
  }
}

// --multi-latent-attention: DeepSeek's latent attention (multi_latent_attention.py,
// MLASelfAttention): the queries through a latent of --q-lora-rank (unset: one linear_q_proj), the
// keys and values through one of --kv-lora-rank (32 by default), each head's query and key
// --qk-head-dim (128) wide and a rotary --qk-pos-emb-head-dim (64) more, each value --v-head-dim
// (128) wide (arguments.py, _add_mla_args). --qk-layernorm gives the latents their norms
// (gpt_layer_specs.py: linear_q_up_proj and linear_kv_up_proj become
// TELayerNormColumnParallelLinear), DeepSeek's q_a_layernorm and kv_a_layernorm, which trainmem
// counts; a latent attention without them is refused. And the multi-token-prediction modules,
// --mtp-num-layers of them, each a layer of the decoder's last kind (multi_token_prediction.py),
// trained.
void read_latent_attention(KeyReader& flags, ModelShape& shape) {
  if (const auto modules = bounded(flags, "--mtp-num-layers", 0, kMaxModelLayers)) {
    shape.num_mtp_layers = static_cast<int>(*modules);
  }
  const char* widths[] = {"--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
                          "--qk-pos-emb-head-dim", "--v-head-dim"};
  if (!flags.has("--multi-latent-attention")) {
    for (const char* flag : widths) {
      if (flags.has(flag)) {
        flags.fault(flag, std::string(flag) +
                              " belongs to latent attention, which the line does not turn on "
                              "(--multi-latent-attention).");
        return;
      }
    }
    return;
  }
  if (flags.get("--normalization", flag_text()).value_or("LayerNorm") != "RMSNorm") {
    flags.fault("--multi-latent-attention",
                "Latent attention is counted with RMSNorm's latent norms, as DeepSeek's: add "
                "--normalization RMSNorm (LayerNorm's would add their biases).");
    return;
  }
  if (!flags.has("--qk-layernorm")) {
    flags.fault("--multi-latent-attention",
                "Latent attention without --qk-layernorm has no latent norms, which trainmem "
                "counts as DeepSeek's (q_a_layernorm, kv_a_layernorm): add --qk-layernorm, as "
                "Megatron-LM's DeepSeek recipes set it.");
    return;
  }
  const auto width = [&](const char* flag, long long fallback) {
    return static_cast<int>(bounded(flags, flag, 1, kMaxModelWidth).value_or(fallback));
  };
  shape.q_lora_rank = flags.has("--q-lora-rank") ? width("--q-lora-rank", 0) : 0;
  shape.kv_lora_rank = width("--kv-lora-rank", 32);
  shape.qk_nope_head_dim = width("--qk-head-dim", 128);
  shape.qk_rope_head_dim = width("--qk-pos-emb-head-dim", 64);
  shape.v_head_dim = width("--v-head-dim", 128);
}

}  // namespace

std::optional<LineModel> read_model(KeyReader& flags) {
  const auto layers = flags.get("--num-layers", whole_number());
  const auto hidden = flags.get("--hidden-size", whole_number());
  const auto heads = flags.get("--num-attention-heads", whole_number());
  const auto sequence = bounded(flags, "--seq-length", 1, kMaxSequenceLength);
  const auto vocabulary = flags.get("--vocab-size", whole_number());
  for (const auto& [flag, value] :
       {std::pair<const char*, std::optional<long long>>{"--num-layers", layers},
        {"--hidden-size", hidden},
        {"--num-attention-heads", heads},
        {"--seq-length", sequence}}) {
    if (!value && flags.ok()) {
      flags.fault(flag, std::string(flag) + " is not given; pretrain_gpt.py needs it.");
    }
  }
  if (!vocabulary && flags.ok()) {
    flags.fault("--vocab-size",
                "The vocabulary is the tokenizer's, which the line does not give ('" +
                    flags.get("--tokenizer-type", flag_text()).value_or("GPT2BPETokenizer") +
                    "'): add --vocab-size N, its size before Megatron-LM's padding.");
  }
  // The block as pretrain_gpt.py builds it from the flags, GPT's defaults where they are not
  // given (megatron/training/arguments.py): LayerNorm, learned absolute positions, biased linear
  // layers, a GeLU MLP of 4h.
  const std::string normalization = flags.get("--normalization", flag_text()).value_or("LayerNorm");
  if (normalization != "LayerNorm" && normalization != "RMSNorm") {
    flags.fault("--normalization", "--normalization " + normalization.substr(0, 40) +
                                       " is not modelled: LayerNorm (the default) or RMSNorm.");
  }
  // The legacy switch sets rope (validate_args).
  const bool legacy_rope = flags.has("--use-rotary-position-embeddings");
  const std::string position =
      legacy_rope
          ? "rope"
          : flags.get("--position-embedding-type", flag_text()).value_or("learned_absolute");
  if (position != "learned_absolute" && position != "rope" && position != "yarn" &&
      position != "none") {
    flags.fault("--position-embedding-type",
                "--position-embedding-type " + position.substr(0, 40) +
                    " is not modelled: learned_absolute (the default), rope, yarn or none.");
  }
  for (const char* flag : {"--fp16", "--use-torch-fsdp2"}) {
    if (flags.has(flag)) {
      flags.fault(flag, std::string(flag) +
                            " is not read from a launch line yet: dense models "
                            "and mixtures in BF16 under Megatron-LM's own DDP are.");
    }
  }
  if (flags.get("--transformer-impl", flag_text()).value_or("transformer_engine") !=
      "transformer_engine") {
    flags.fault("--transformer-impl",
                "--transformer-impl local is not modelled: Transformer Engine's layers are.");
  }
  // validate_args: the positions cover the sequence.
  const auto positions = flags.get("--max-position-embeddings", whole_number());
  if (positions && sequence && *positions < *sequence) {
    flags.fault("--max-position-embeddings",
                "--max-position-embeddings " + std::to_string(*positions) +
                    " is under --seq-length " + std::to_string(*sequence) +
                    ", which Megatron-LM refuses.");
  }
  if (!flags.ok()) return {};
  const bool swiglu = flags.has("--swiglu");
  const long long query_groups = flags.has("--group-query-attention")
                                     ? flags.get("--num-query-groups", whole_number()).value_or(1)
                                     : *heads;
  nlohmann::json config = {
      {"model_type", "llama"},
      {"hidden_size", *hidden},
      {"num_hidden_layers", *layers},
      {"num_attention_heads", *heads},
      {"num_key_value_heads", query_groups},
      // validate_args: under --swiglu two thirds of 4h, down to a multiple of 64; else 4h.
      {"intermediate_size", flags.get("--ffn-hidden-size", whole_number())
                                .value_or(swiglu ? *hidden * 8 / 3 / 64 * 64 : 4 * *hidden)},
      {"vocab_size", *vocabulary},
      {"tie_word_embeddings", !flags.has("--untie-embeddings-and-output-weights")},
      {"max_position_embeddings", positions.value_or(*sequence)},
      {"attention_dropout", 0.0}};
  if (const auto channels = flags.get("--kv-channels", whole_number()))
    config["head_dim"] = *channels;
  if (!flags.ok()) return {};
  LineModel model;
  const ConfigParse shape = parse_hf_config(config.dump());
  if (!shape.answer.ok()) {
    flags.fault("launch", "The line's model: " + shape.answer.message);
    return {};
  }
  model.shape = shape.shape;
  // What the Llama config cannot say: a GeLU MLP, LayerNorms with their biases, the linear
  // layers' biases (add_bias_linear; Q, K and V's also under --add-qkv-bias), learned positions
  // of --max-position-embeddings rows (LanguageModelEmbedding), unless --no-position-embedding.
  const bool bias_linear = !flags.has("--disable-bias-linear");
  model.shape.gated_mlp = swiglu;
  model.shape.norm_bias = normalization == "LayerNorm";
  model.shape.attention_qkv_bias = bias_linear || flags.has("--add-qkv-bias");
  // --qk-layernorm: a norm of --normalization's kind over each head's queries and keys
  // (TransformerConfig.qk_layernorm; the layer spec's q_layernorm and k_layernorm, TENorm); under
  // latent attention the latents' norms instead (read_latent_attention).
  model.shape.qk_norm = flags.has("--qk-layernorm") && !flags.has("--multi-latent-attention");
  model.shape.attention_output_bias = bias_linear;
  model.shape.mlp_bias = bias_linear;
  if (position == "learned_absolute" && !flags.has("--no-position-embedding")) {
    model.shape.num_position_embeddings = static_cast<int>(positions.value_or(*sequence));
  }
  model.shape.name = std::to_string(*layers) + "-layer model of width " + std::to_string(*hidden) +
                     " (the launch line's)";
  read_experts(flags, *layers, model.shape);
  read_latent_attention(flags, model.shape);
  if (!flags.ok()) return {};
  if (const std::string problem = model_shape_problem(model.shape); !problem.empty()) {
    flags.fault("launch", "The line's model: " + problem);
    return {};
  }
  model.layers = *layers;
  model.sequence = *sequence;
  model.vocabulary = *vocabulary;
  return model;
}

// The router's flags (router.py and moe_utils.py at 23e00ed; arguments.py's choices): the logits'
// dtype, the score function, an auxiliary loss with a coefficient above 0 for aux_loss or
// seq_aux_loss (one coefficient for each type, or one for the one type), the z-loss wherever its
// coefficient is set (apply_z_loss runs for any value but None), and Transformer Engine's fused
// router and permutation. fp64 logits and sinkhorn routing are refused: not modelled.
void read_router(KeyReader& flags, TrainingSetup& setup) {
  const std::vector<std::string> types =
      words_of(flags.get("--moe-router-load-balancing-type", flag_text()).value_or("aux_loss"));
  const std::vector<std::string> coefficients =
      words_of(flags.get("--moe-aux-loss-coeff", flag_text()).value_or("0"));
  if (types.size() != coefficients.size()) {
    flags.fault("--moe-aux-loss-coeff",
                "--moe-aux-loss-coeff gives one coefficient for each "
                "--moe-router-load-balancing-type, as Megatron-LM reads them.");
    return;
  }
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::string& type = types[i];
    if (type == "sinkhorn") {
      flags.fault("--moe-router-load-balancing-type",
                  "Sinkhorn routing (--moe-router-load-balancing-type sinkhorn) is not modelled: "
                  "choose aux_loss, seq_aux_loss or none.");
      return;
    }
    if (type != "aux_loss" && type != "seq_aux_loss" && type != "none") {
      flags.fault("--moe-router-load-balancing-type",
                  "--moe-router-load-balancing-type must be aux_loss, seq_aux_loss, sinkhorn or "
                  "none.");
      return;
    }
    char* end = nullptr;
    const double coefficient = std::strtod(coefficients[i].c_str(), &end);
    if (end == coefficients[i].c_str() || *end != '\0' || !std::isfinite(coefficient)) {
      flags.fault("--moe-aux-loss-coeff", "--moe-aux-loss-coeff must be numbers.");
      return;
    }
    if (type != "none" && coefficient > 0) setup.moe_aux_loss = true;
  }
  const std::string dtype = flags.get("--moe-router-dtype", flag_text()).value_or("");
  if (dtype == "fp32") {
    setup.moe_router_dtype = RouterDtype::kFp32;
  } else if (!dtype.empty()) {
    flags.fault("--moe-router-dtype",
                "--moe-router-dtype fp32 or the input's dtype (the flag left out) are modelled; "
                "fp64, which Transformer Engine's fused router refuses, is not.");
    return;
  }
  const std::string score =
      flags.get("--moe-router-score-function", flag_text()).value_or("softmax");
  const bool pre_softmax = flags.has("--moe-router-pre-softmax");
  // TransformerConfig.__post_init__'s own refusals.
  if (score != "sigmoid" && setup.custom_model.router_bias) {
    flags.fault("--moe-router-enable-expert-bias",
                "--moe-router-enable-expert-bias needs --moe-router-score-function sigmoid, as "
                "Megatron-LM requires.");
    return;
  }
  if (score == "softmax" && !pre_softmax && setup.custom_model.num_experts > 1 &&
      setup.custom_model.num_experts_per_token == 1) {
    flags.fault("--moe-router-topk",
                "--moe-router-topk 1 under the softmax needs --moe-router-pre-softmax, as "
                "Megatron-LM requires.");
    return;
  }
  if (score == "sigmoid") {
    setup.moe_router_score = RouterScore::kSigmoid;  // the pre-softmax flag is softmax's alone
  } else if (score == "softmax") {
    setup.moe_router_score = pre_softmax ? RouterScore::kSoftmaxPre : RouterScore::kSoftmax;
  } else {
    flags.fault("--moe-router-score-function",
                "--moe-router-score-function must be softmax or sigmoid.");
    return;
  }
  if (const auto z_loss = decimal(flags, "--moe-z-loss-coeff")) setup.moe_z_loss = true;
  setup.moe_router_fusion = flags.has("--moe-router-fusion");
  setup.moe_permute_fusion = flags.has("--moe-permute-fusion");
  setup.megatron_experimental = flags.has("--enable-experimental");
}

}  // namespace trainmem::megatron
