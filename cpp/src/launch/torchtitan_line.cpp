// torchtitan's launch line since its configs became Python functions (torchrun … -m
// torchtitan.train --module llama3 --config NAME --section.key value …), read into the setup
// (launch.hpp) as torchtitan b5bcd76c (August 21, 2026) runs it: the named function of
// torchtitan/models/{llama3,qwen3,deepseek_v3,gpt_oss}/config_registry.py, then the line's
// overrides. Its defaults have moved release by release since 9810191 (February 2026: the loss
// chunked over 8 since 786e26f, April; wq, wk and wv fused since 3396a4b37, June; batches counted
// in tokens since 73aed7f, August), and a line says its era only by what it names. A line is read
// that counts its batch in tokens (--training.num_tokens_per_microbatch_per_dp_rank,
// --training.max_context_length) or names one of the NVFP4 configs (bcc09297a, August 5, whose
// token counts were the same before 73aed7f), and that turns off the CUDA graphs its trainer
// captures by default since f84224a (August 13), which are not modelled: that flag dates the line
// too. Any other is refused.
#include <algorithm>
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
#include "trainmem/settings.hpp"

namespace trainmem {

namespace {

using megatron::bounded;
using megatron::flag_text;

constexpr const char* kTitanLineKind = "torchtitan launch line (torchtitan.train, b5bcd76c)";
constexpr const char* kProgram = "torchtitan.train";
constexpr long long kMaxTokens = 1LL << 30;

// One function of a model family's config_registry.py at b5bcd76c, as it builds its
// Trainer.Config.
struct RegistryConfig {
  const char* module;  // --module: the family's folder under torchtitan/models
  const char* name;
  const char* model_id;           // model_registry's flavor, as its Hugging Face assets name it
  long long tokens;               // training.num_tokens_per_microbatch_per_dp_rank
  long long context;              // training.max_context_length
  Recompute recompute;            // SelectiveAC (per-op) or FullAC
  Compile compile;                // CompileConfig: off, components ["model"] or ["loss"]
  long long tensor_parallel;      // parallelism.tensor_parallel_degree
  bool nvfp4;                     // NVFP4LinearConverter with the BF16 tail of 0.15
  bool pins_era;                  // the function came with token-counted batches
  const char* refused = nullptr;  // why it is not read, or nullptr
  long long expert_parallel = 1;  // parallelism.expert_parallel_degree
  bool cuda_graphs_off = false;   // training.disable_cuda_graphs=True
};

const std::vector<RegistryConfig>& registry() {
  static const std::vector<RegistryConfig> configs = {
      {"llama3", "llama3_8b", "llama3.1-8b", 8192, 8192, Recompute::kSelectiveOp, Compile::kOff, 1,
       false, false},
      {"llama3", "llama3_8b_first_85_pct_layers_nvfp4", "llama3.1-8b", 8192, 8192,
       Recompute::kSelectiveOp, Compile::kBlocks, 1, true, true},
      {"llama3", "llama3_8b_mxfp8", "llama3.1-8b", 8192, 8192, Recompute::kSelectiveOp,
       Compile::kBlocks, 1, false, true,
       "its MXFP8LinearConverter converts every linear layer, the output layer too (fqns []), "
       "which trainmem's MXFP8 does not count"},
      {"llama3", "llama3_70b", "llama3.1-70b", 8 * 8192, 8192, Recompute::kFull, Compile::kOff, 8,
       false, false},
      {"llama3", "llama3_405b", "llama3.1-405b", 2 * 8192, 8192, Recompute::kFull, Compile::kBlocks,
       8, false, false,
       "its Float8 linear layers under async tensor parallelism, as this torchtitan runs them, "
       "are not modelled"},
      // Qwen3's dense models (their embedding tied to the output layer at 0.6B and 1.7B, as in
      // Qwen's config.json); the NVFP4 recipe on sft_qwen3_8b_math's data (a GSM8K chat set
      // packed first-fit into sequences of 2,048, varlen attention, which saves what the
      // attention kernel saves).
      {"qwen3", "qwen3_0_6b", "qwen3-0.6b", 4 * 4096, 4096, Recompute::kSelectiveOp, Compile::kOff,
       1, false, false},
      {"qwen3", "qwen3_1_7b", "qwen3-1.7b", 4 * 4096, 4096, Recompute::kSelectiveOp, Compile::kOff,
       1, false, false},
      {"qwen3", "qwen3_8b_first_85_pct_layers_nvfp4", "qwen3-8b", 2048, 2048,
       Recompute::kSelectiveOp, Compile::kBlocks, 1, true, true},
      {"qwen3", "qwen3_14b", "qwen3-14b", 4 * 4096, 4096, Recompute::kFull, Compile::kOff, 1, false,
       false},
      {"qwen3", "qwen3_32b", "qwen3-32b", 2 * 4096, 4096, Recompute::kFull, Compile::kOff, 1, false,
       false},
      // Qwen3-30B-A3B's mixture (_build_qwen3_moe_layers: 128 experts of 768, top-8, softmax
      // scores, route_norm), its experts exchanged by the standard all-to-all dispatcher
      // (moe_comm_backend "standard") under --parallelism.expert_parallel_degree.
      {"qwen3", "qwen3_30b_a3b", "qwen3-30b-a3b", 2 * 4096, 4096, Recompute::kFull, Compile::kOff,
       1, false, false},
      // DeepSeek-V3's configs (models/deepseek_v3/config_registry.py): latent attention over flex
      // attention, the MoE's experts exchanged by the standard all-to-all dispatcher under expert
      // parallelism (8 and 2), per-op selective recomputation, the loss compiled alone, CUDA
      // graphs off. The "16B" flavour is DeepSeek-V2-Lite's shape, the "671B" DeepSeek-V3's
      // (no MTP module: num_mtp_layers 0).
      {"deepseek_v3", "deepseek_v3_16b", "deepseek-v2-lite", 4 * 4096, 4096,
       Recompute::kSelectiveOp, Compile::kLoss, 1, false, false, nullptr, 8, true},
      {"deepseek_v3", "deepseek_v3_671b", "deepseek-v3", 4 * 4096, 4096, Recompute::kSelectiveOp,
       Compile::kLoss, 1, false, false, nullptr, 2, true},
      {"deepseek_v3", "deepseek_v3_16b_hybridep", "deepseek-v2-lite", 4 * 4096, 4096,
       Recompute::kSelectiveOp, Compile::kLoss, 1, false, false,
       "its HybridEP dispatcher (moe_comm_backend \"hybridep\") and the CUDA graphs it captures "
       "are not modelled",
       8, false},
      {"deepseek_v3", "deepseek_v3_16b_minimal_async_ep", "deepseek-v2-lite", 4 * 4096, 4096,
       Recompute::kSelectiveOp, Compile::kLoss, 1, false, false,
       "its minimal_async_ep dispatcher, fused SwiGLU and the CUDA graphs it captures are not "
       "modelled",
       1, false},
      {"deepseek_v3", "deepseek_v3_671b_float8", "deepseek-v3", 4 * 4096, 4096,
       Recompute::kSelectiveOp, Compile::kLoss, 1, false, false,
       "its Float8 linear layers and grouped experts are not modelled under the per-op policy", 2,
       true},
      // gpt-oss (models/gpt_oss/config_registry.py and __init__.py): attention with sinks over
      // varlen attention (a 128-token window at even layers), GptOssGroupedExperts (32 or 128
      // experts of 2,880 with biases, top-4, softmax scores with route_norm, a router with a bias)
      // over the standard dispatcher, FullAC, nothing compiled. The debug models' shapes are no
      // preset's.
      {"gpt_oss", "gpt_oss_20b", "gpt-oss-20b", 8192, 8192, Recompute::kFull, Compile::kOff, 1,
       false, false},
      {"gpt_oss", "gpt_oss_120b", "gpt-oss-120b", 8192, 8192, Recompute::kFull, Compile::kOff, 1,
       false, false},
  };
  return configs;
}

// Overrides with no bearing on memory: how long it trains, what it reads and logs, its learning
// rate, where it writes, its seed and timeouts.
bool of_no_bearing(const std::string& key) {
  for (const char* prefix :
       {"--training.steps", "--training.max_norm", "--training.gc_freq", "--dataloader.",
        "--metrics.", "--profiler.", "--checkpoint.", "--validator.freq", "--validator.steps",
        "--lr_scheduler.", "--tokenizer.", "--dump_folder", "--debug.seed",
        "--comm.init_timeout_seconds", "--comm.train_timeout_seconds", "--hf_assets_path"}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  // An optimiser parameter group's learning rate (--optimizer.param-groups.0.optimizer-kwargs.lr).
  const std::string lr = ".optimizer_kwargs.lr";
  return key.rfind("--optimizer.param_groups.", 0) == 0 && key.size() > lr.size() &&
         key.compare(key.size() - lr.size(), lr.size(), lr) == 0;
}

// tyro writes a field's words with hyphens or underscores alike: read as underscores.
FileKeys normalised(FileKeys flags) {
  for (FileKey& flag : flags) {
    for (std::size_t at = 2; at < flag.key.size(); ++at) {
      if (flag.key[at] == '-') flag.key[at] = '_';
    }
  }
  return flags;
}

// A degree: a whole number, or −1 where torchtitan fills it from the world size.
std::optional<long long> degree(KeyReader& flags, const std::string& flag, bool fills) {
  const nlohmann::json* value = flags.find(flag);
  if (fills && value != nullptr && value->get<std::string>() == "-1") {
    flags.take(flag);
    return -1;
  }
  return bounded(flags, flag, 1, kTorchtitanMaxDegree);
}

// A switch tyro writes as --section.name or --section.no_name, the last given winning; tyro
// takes no value after either (--compile.enable=False is an error there).
std::optional<bool> switch_value(KeyReader& flags, const std::string& flag) {
  const std::size_t dot = flag.rfind('.');
  const std::string negated = flag.substr(0, dot + 1) + "no_" + flag.substr(dot + 1);
  std::optional<bool> value;
  for (const FileKey& each : flags.keys()) {
    if (each.key != flag && each.key != negated) continue;
    if (!each.value.get<std::string>().empty()) {
      flags.fault(each.key, each.key + " takes no value: write " + flag + " or " + negated + ".");
    }
    value = each.key == flag;
  }
  flags.take(flag);
  flags.take(negated);
  return value;
}

}  // namespace

LaunchConfig read_torchtitan_line(const std::string& text, const TrainingSetup& base,
                                  const LaunchContext& context) {
  LaunchConfig launch;
  launch.kind = kTitanLineKind;
  launch.leaves = left_by_every_file();
  launch.setup = setup_beside(base, launch.leaves);
  const Command command = command_of(text, kProgram);
  if (!command.problem.empty()) {
    launch.answer = refusal("launch", command.problem);
    return launch;
  }
  std::string problem;
  KeyReader flags(
      launch, command_line_dialect(),
      normalised(flags_of(command.words,
                          {"--compile.enable", "--compile.no_enable", "--compile.no-enable",
                           "--training.disable_cuda_graphs", "--training.disable-cuda-graphs"},
                          kProgram, problem)));
  if (!problem.empty()) {
    launch.answer = refusal("launch", problem);
    return launch;
  }
  const std::string module = flags.get("--module", flag_text()).value_or("");
  if (module != "llama3" && module != "qwen3" && module != "deepseek_v3" && module != "gpt_oss") {
    flags.fault("--module", "--module " + (module.empty() ? std::string("is not given") : module) +
                                ": torchtitan's llama3, qwen3, deepseek_v3 and gpt_oss configs "
                                "are read (config_registry.py at b5bcd76c); the other model "
                                "families' are not yet.");
    return launch;
  }
  const std::string name = flags.get("--config", flag_text()).value_or("");
  const RegistryConfig* config = nullptr;
  for (const RegistryConfig& each : registry()) {
    if (module == each.module && name == each.name) config = &each;
  }
  if (config == nullptr || config->refused != nullptr) {
    std::string known;
    for (const RegistryConfig& each : registry()) {
      if (module == each.module && each.refused == nullptr) {
        known += (known.empty() ? "" : ", ") + std::string(each.name);
      }
    }
    flags.fault("--config", "--config " + (name.empty() ? std::string("is not given") : name) +
                                (config != nullptr ? std::string(" is not read: ") + config->refused
                                                   : std::string(" is not read")) +
                                ". Read: " + known + ".");
    return launch;
  }
  // Keys of other eras: the local batch and sequence before 73aed7f, the TOML era's [job].
  for (const FileKey& each : flags.keys()) {
    if (each.key == "--training.local_batch_size" || each.key == "--training.seq_len" ||
        each.key.rfind("--job.", 0) == 0) {
      flags.fault(each.key, each.key +
                                " is a key of an earlier torchtitan than b5bcd76c, whose line is "
                                "read (batches counted in tokens since 73aed7f, August 2026; no "
                                "[job] section since its configs became Python).");
      return launch;
    }
  }
  if (flags.find("--checkpoint.create_seed_checkpoint") != nullptr) {
    flags.fault("--checkpoint.create_seed_checkpoint",
                "--checkpoint.create_seed_checkpoint writes a seed checkpoint on the CPU and "
                "trains nothing.");
    return launch;
  }
  const std::string tokens_flag = "--training.num_tokens_per_microbatch_per_dp_rank";
  const std::string context_flag = "--training.max_context_length";
  if (!config->pins_era && flags.find(tokens_flag) == nullptr &&
      flags.find(context_flag) == nullptr) {
    flags.fault("--config",
                "--config " + name +
                    " names a config whose defaults have moved release by release, and the line "
                    "says no more of its version: one that counts its batch in tokens (" +
                    tokens_flag + ", torchtitan 73aed7f on, August 2026) is read as b5bcd76c.");
    return launch;
  }
  TrainingSetup& setup = launch.setup;
  setup.stack = Stack::kTorchtitan;
  setup.model_id = config->model_id;
  setup.logits = true;
  setup.loss = Loss::kChunkedWrapper;  // ChunkedLossWrapper, num_chunks 8
  // llama3's and qwen3's model_registry fuse_qkv=True, since 3396a4b37; DeepSeek-V3's latent
  // attention has no such option.
  setup.fused_qkv = module != "deepseek_v3";
  setup.recompute = config->recompute;
  // CompileConfig: enable, and its components (the model and the loss unless the config names
  // them: the model alone, or the loss alone).
  bool compiled = config->compile != Compile::kOff;
  bool model_compiled = config->compile != Compile::kLoss;
  bool loss_compiled = config->compile == Compile::kLoss;
  if (const std::optional<bool> compile = switch_value(flags, "--compile.enable")) {
    if (*compile && !compiled) loss_compiled = true;  // CompileConfig's default components
    compiled = *compile;
  }
  if (const std::optional<std::string> components =
          flags.get("--compile.components", flag_text())) {
    if (*components == "model") {
      model_compiled = true;
      loss_compiled = false;
    } else if (*components == "model,loss" || *components == "loss,model") {
      model_compiled = true;
      loss_compiled = true;  // tyro splits a list's one value at its commas
    } else if (*components == "loss") {
      model_compiled = false;
      loss_compiled = true;
    } else {
      flags.fault("--compile.components", "--compile.components '" + components->substr(0, 40) +
                                              "' is not read: model, loss, or model,loss, are.");
    }
  }
  setup.compile = !compiled                         ? Compile::kOff
                  : model_compiled && loss_compiled ? Compile::kBlocksAndLoss
                  : loss_compiled                   ? Compile::kLoss
                                                    : Compile::kBlocks;
  if (config->nvfp4) {
    setup.precision = Precision::kNvfp4Mixed;
    setup.nvfp4_bf16_tail = kNvfp4DefaultBf16TailShare;
  }
  // The micro-batch: since 73aed7f one flat row of its tokens, positions reset at each document
  // and each max_context_length; counted as sequences of the context where they divide it, else
  // as one sequence of them all (FlashAttention's memory is the tokens' either way).
  const long long context_length =
      bounded(flags, context_flag, 1, kMaxTokens).value_or(config->context);
  const long long tokens = bounded(flags, tokens_flag, 1, kMaxTokens).value_or(config->tokens);
  const bool whole_sequences = tokens % context_length == 0;
  setup.sequence_length = static_cast<int>(whole_sequences ? context_length : tokens);
  setup.micro_batch_sequences = static_cast<int>(whole_sequences ? tokens / context_length : 1);
  setup.loss_chunks = static_cast<int>(
      bounded(flags, "--loss.num_chunks", 1, kMaxLossChunks).value_or(kDefaultLossChunks));
  // The mesh (ParallelismConfig): d·c FSDP2 shards, −1 filled from the world size.
  const long long shard =
      degree(flags, "--parallelism.data_parallel_shard_degree", true).value_or(-1);
  const long long t = degree(flags, "--parallelism.tensor_parallel_degree", false)
                          .value_or(config->tensor_parallel);
  const long long c = degree(flags, "--parallelism.context_parallel_degree", false).value_or(1);
  const long long p = degree(flags, "--parallelism.pipeline_parallel_degree", false).value_or(1);
  const long long replicate =
      degree(flags, "--parallelism.data_parallel_replicate_degree", false).value_or(1);
  // Expert parallelism borrows its ranks from dp_shard·cp·tp (parallel_dims.py); the core's check
  // holds it to a mixture whose experts and devices it divides.
  long long ep = degree(flags, "--parallelism.expert_parallel_degree", false)
                     .value_or(config->expert_parallel);
  if (t > 1) {
    flags.fault("--parallelism.tensor_parallel_degree",
                "--parallelism.tensor_parallel_degree " + std::to_string(t) +
                    ": this torchtitan's tensor parallelism (its spmd_types local_map layouts) "
                    "is not modelled; set it to 1.");
  }
  if (p > 1 || replicate > 1) {
    flags.fault(p > 1 ? "--parallelism.pipeline_parallel_degree"
                      : "--parallelism.data_parallel_replicate_degree",
                "This torchtitan's pipeline and replicated (HSDP) meshes are not read from its "
                "launch line; set --parallelism.pipeline_parallel_degree and "
                "--parallelism.data_parallel_replicate_degree to 1.");
  }
  long long world = context.world_size;
  if (world == 0 && command.nproc > 0 && command.nnodes > 0) world = command.nproc * command.nnodes;
  long long d = shard;
  if (d == -1) {
    if (world <= 0 || world % (t * c) != 0) {
      flags.fault("--parallelism.data_parallel_shard_degree",
                  "--parallelism.data_parallel_shard_degree is -1, the world size over t·c, and "
                  "the world size is not known (or not a multiple of t·c): give torchrun's "
                  "--nproc_per_node, or --world-size.");
      d = 1;
    } else {
      d = world / (t * c);
    }
  }
  // parallel_dims.py asserts the degrees multiply to the world size.
  if (shard != -1 && world > 0 && d * t * c * p * replicate != world) {
    flags.fault("--parallelism.data_parallel_shard_degree",
                "The mesh's degrees, d " + std::to_string(d) + " × t " + std::to_string(t) +
                    " × c " + std::to_string(c) + ", do not multiply to the world size " +
                    std::to_string(world) + ", as torchtitan requires.");
  }
  // b5bcd76c wraps the model in FSDP2 even over one device (parallelize.py: "Always run
  // apply_fsdp_to_decoder"), which the torchtitan stack counts over two or more.
  if (d * c == 1 && flags.ok()) {
    flags.fault("--parallelism.data_parallel_shard_degree",
                "One device: torchtitan b5bcd76c still wraps the model in FSDP2, over one rank, "
                "which the torchtitan stack does not model (it counts FSDP2 over two or more).");
  }
  setup.layout.data_parallel = static_cast<int>(d);
  setup.layout.context_parallel = static_cast<int>(c);
  // On a dense model expert parallelism has "no effect" (configs.py), once parallel_dims.py has
  // checked it divides dp_shard·cp·tp.
  const ModelShape* shape = find_preset(config->model_id);
  const bool dense = shape != nullptr && shape->num_experts <= 1;
  if (dense && ep > 1) {
    if ((d * c * t) % ep != 0) {
      flags.fault("--parallelism.expert_parallel_degree",
                  "--parallelism.expert_parallel_degree " + std::to_string(ep) +
                      " must divide dp_shard·cp·tp (" + std::to_string(d * c * t) +
                      "), as torchtitan's parallel_dims.py requires.");
    } else {
      launch.notes.push_back("--parallelism.expert_parallel_degree " + std::to_string(ep) +
                             " has no effect on " + shape->name +
                             ", a dense model (torchtitan's configs.py): read as ep 1.");
    }
    ep = 1;
  }
  setup.layout.expert_parallel = static_cast<int>(ep);
  setup.layout.zero_stage = 3;
  // TrainingConfig.disable_cuda_graphs (False): since f84224a (August 13, 2026) the trainer
  // captures its forward and backward passes in a CUDA graph, whose private pool keeps what they
  // allocate between replays, and zero_grad keeps the gradients; not modelled.
  if (!switch_value(flags, "--training.disable_cuda_graphs").value_or(config->cuda_graphs_off)) {
    flags.fault("--training.disable_cuda_graphs",
                "This torchtitan captures the forward and backward passes in a CUDA graph unless "
                "--training.disable_cuda_graphs is given (f84224a, August 13, 2026): the graph's "
                "private memory pool is not modelled. Add --training.disable_cuda_graphs to have "
                "the step estimated as it runs eagerly.");
  }
  if (!flags.ok()) return launch;
  std::set<std::string> set_aside;
  for (const FileKey& flag : flags.keys()) {
    if (of_no_bearing(flag.key)) set_aside.insert(flag.key);
  }
  flags.list_unread(set_aside);
  launch.notes.push_back(
      "Read as torchtitan b5bcd76c (August 21, 2026) builds config_registry.py's " + name + ": " +
      setup.model_id + ", the loss chunked over " + std::to_string(setup.loss_chunks) +
      " (ChunkedLossWrapper), " + (setup.fused_qkv ? "wq, wk and wv fused, " : "") +
      (config->recompute == Recompute::kSelectiveOp ? "per-op selective recomputation (SelectiveAC)"
                                                    : "full recomputation (FullAC)") +
      (setup.compile == Compile::kBlocks          ? ", the model compiled"
       : setup.compile == Compile::kBlocksAndLoss ? ", the model and the loss compiled"
       : setup.compile == Compile::kLoss          ? ", the loss compiled"
                                                  : "") +
      (config->nvfp4 ? ", NVFP4 in all but the last 15% of the layers" : "") +
      "; a later torchtitan's defaults may differ.");
  launch.notes.push_back(
      format_count(static_cast<double>(tokens)) + " tokens a micro-batch, one flat row: " +
      (whole_sequences
           ? std::to_string(setup.micro_batch_sequences) +
                 (setup.micro_batch_sequences == 1 ? " sequence of " : " sequences of ") +
                 std::to_string(context_length)
           : "counted as one sequence of them all (no whole number of " +
                 std::to_string(context_length) + "-token contexts)") +
      ".");
  if (module == "deepseek_v3" && setup.recompute == Recompute::kSelectiveOp) {
    launch.notes.push_back(
        "Its flex attention runs as a compiled region (FlexAttention's torch.compile with "
        "wrap_inductor_compiled_regions, inductor_compiled_code in the per-op policy's save "
        "list): counted as keeping its output and log-sum-exp; whether SAC's cache also keeps "
        "the queries, keys and values the compiled forward saves for its backward pass is not "
        "verified on a device.");
  }
  if (shard == -1) {
    launch.notes.push_back("FSDP over d " + std::to_string(d) + ": the world size " +
                           std::to_string(world) + " over t·c " + std::to_string(t * c) + ".");
  }
  if (ep > 1) {
    launch.notes.push_back("Expert parallelism " + std::to_string(ep) +
                           ": each rank holds its share of the experts whole, exchanging the "
                           "routed tokens by all-to-all, and FSDP2 shards those experts over "
                           "efsdp = d·c / ep (parallel_dims.py).");
  }
  return launch;
}

}  // namespace trainmem
