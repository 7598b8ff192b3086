// Megatron-LM's launch line: the layout (megatron_flags.hpp), by megatron/training/arguments.py's
// flags and the checks validate_args and TransformerConfig make of them.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "launch/megatron_flags.hpp"
#include "trainmem/format.hpp"

namespace trainmem::megatron {

namespace {

// --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split: the
// embedding and the loss each take a layer's place in the split, n = (L + e + l) / p layers a
// stage, the first building n - 1 and the last n - 1 (transformer_block.py,
// get_num_layers_to_build): the uneven first and last stages' counts.
void read_split_accounting(KeyReader& flags, long long layers, ParallelLayout& layout) {
  const bool embedding = flags.has("--account-for-embedding-in-pipeline-split");
  const bool loss = flags.has("--account-for-loss-in-pipeline-split");
  if (!embedding && !loss) return;
  const char* flag = embedding ? "--account-for-embedding-in-pipeline-split"
                               : "--account-for-loss-in-pipeline-split";
  const long long p = layout.pipeline_parallel;
  if (layout.pipeline_first_stage_layers > 0 || layout.pipeline_last_stage_layers > 0) {
    flags.fault(flag, std::string(flag) +
                          " cannot stand beside --decoder-first-pipeline-num-layers or "
                          "--decoder-last-pipeline-num-layers, as Megatron-LM refuses.");
    return;
  }
  if (p == 1) return;  // one stage builds every layer
  if (layout.virtual_pipeline_stages > 1) {
    flags.fault(flag, std::string(flag) +
                          " with virtual stages takes the layer from the first (or last) virtual "
                          "stage alone, which is not modelled: only under 1F1B.");
    return;
  }
  const long long counted = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (counted % p != 0) {
    flags.fault(flag, "The " + std::to_string(layers) + " layers with the " +
                          (embedding && loss ? "embedding and the loss"
                           : embedding       ? "embedding"
                                             : "loss") +
                          " counted as layers (" + std::to_string(counted) +
                          ") must divide over p " + std::to_string(p) +
                          ", as Megatron-LM requires.");
    return;
  }
  const long long per_stage = counted / p;
  if (per_stage < 2) {
    flags.fault(flag, "A pipeline stage of the embedding or the loss alone (" +
                          std::to_string(counted) + " over p " + std::to_string(p) +
                          ") is not modelled.");
    return;
  }
  if (embedding) layout.pipeline_first_stage_layers = static_cast<int>(per_stage - 1);
  if (loss) layout.pipeline_last_stage_layers = static_cast<int>(per_stage - 1);
}

// One left-to-right pass of parse_str_to_list's unrolling: "(unit)*n" where `grouped`, "x*n"
// otherwise, each replaced by n units (re.sub's semantics: what a replacement makes is not
// matched again). `problem` is set when the result would pass 65,536 characters.
std::string unroll_layout(const std::string& text, bool grouped, std::string& problem) {
  constexpr std::size_t kMaxUnrolled = 1 << 16;
  std::string out;
  std::size_t index = 0;
  while (index < text.size() && problem.empty()) {
    std::size_t unit_begin = index;
    std::size_t unit_end = index + 1;  // one character
    if (grouped) {
      const std::size_t close = text.find(')', index + 1);
      if (text[index] != '(' || close == std::string::npos || close == index + 1) {
        out += text[index++];
        continue;
      }
      unit_begin = index + 1;
      unit_end = close;
    }
    std::size_t digits = unit_end + (grouped ? 1 : 0);
    if (digits >= text.size() || text[digits] != '*' || digits + 1 >= text.size() ||
        std::isdigit(static_cast<unsigned char>(text[digits + 1])) == 0) {
      out += text[index++];
      continue;
    }
    std::size_t end = digits + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) ++end;
    const std::string count = text.substr(digits + 1, end - digits - 1);
    const std::string unit = text.substr(unit_begin, unit_end - unit_begin);
    if (count.size() > 5 || out.size() + unit.size() * std::stoull(count) > kMaxUnrolled) {
      problem = " unrolls to more than " + format_count(kMaxUnrolled) + " characters.";
      break;
    }
    for (unsigned long long copy = 0; copy < std::stoull(count); ++copy) out += unit;
    index = end;
  }
  return out;
}

// --pipeline-model-parallel-layout ("Et*3|(tt|)*6tmL"): each pipeline stage's layers, the stages
// in order of virtual stage then rank, p·v of them (pipeline_parallel_layer_layout.py,
// parse_str_to_list: commas dropped, "(…)*n" then "x*n" unrolled, '|' between stages; E the
// embedding, t a decoder layer, m an MTP layer, L the loss). Read where the estimate can hold it:
// the first rank's layers and the last's, the ranks between alike, each rank's layers split
// evenly over its virtual stages.
void read_pipeline_layout(KeyReader& flags, long long layers, ParallelLayout& layout) {
  const auto text = flags.get("--pipeline-model-parallel-layout", flag_text());
  if (!text) return;
  const char* flag = "--pipeline-model-parallel-layout";
  for (const char* other :
       {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
        "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
        "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"}) {
    if (flags.has(other)) {
      flags.fault(
          flag, std::string(flag) + " cannot stand beside " + other + ", as Megatron-LM refuses.");
      return;
    }
  }
  std::string unrolled;
  for (char c : *text) {
    if (c != ',' && c != ' ') unrolled += c;
  }
  if (unrolled.size() > 4096) {
    flags.fault(flag, std::string(flag) + " is longer than 4,096 characters.");
    return;
  }
  // Each repetition unrolled, "(…)*n" in one pass and then "x*n", as re.sub does.
  std::string problem;
  unrolled = unroll_layout(unroll_layout(unrolled, true, problem), false, problem);
  if (!problem.empty()) {
    flags.fault(flag, std::string(flag) + problem);
    return;
  }
  // The stages' decoder layers, and where the embedding, the loss and MTP stand.
  std::vector<long long> decoder(1, 0);
  long long embeddings = 0;
  long long losses = 0;
  bool embedding_first = false;
  bool loss_last = false;
  for (std::size_t index = 0; index < unrolled.size(); ++index) {
    const char c = unrolled[index];
    if (c == '|') {
      decoder.push_back(0);
    } else if (c == 't') {
      ++decoder.back();
    } else if (c == 'E') {
      ++embeddings;
      embedding_first = index == 0;
    } else if (c == 'L') {
      ++losses;
      loss_last = index + 1 == unrolled.size();
    } else if (c == 'm') {
      flags.fault(flag,
                  std::string(flag) + ": MTP layers (m) are not read from a launch line yet.");
      return;
    } else {
      flags.fault(flag, std::string(flag) + ": '" + std::string(1, c) +
                            "' is not a layer: E, t, m, L, with | between stages.");
      return;
    }
  }
  long long counted = 0;
  for (const long long count : decoder) counted += count;
  const long long p = layout.pipeline_parallel;
  const long long stages = static_cast<long long>(decoder.size());
  if (embeddings != 1 || losses != 1 || !embedding_first || !loss_last || counted != layers ||
      stages % p != 0) {
    flags.fault(flag, std::string(flag) +
                          " must begin with the embedding (E), end with the loss "
                          "(L), hold the " +
                          std::to_string(layers) + " decoder layers (t) and p·v stages (p " +
                          std::to_string(p) + "), as Megatron-LM requires.");
    return;
  }
  const long long v = stages / p;
  // Each rank's layers, and whether its virtual stages split them evenly.
  std::vector<long long> per_rank(static_cast<std::size_t>(p), 0);
  bool even_chunks = true;
  for (long long rank = 0; rank < p; ++rank) {
    const long long first_chunk = decoder[static_cast<std::size_t>(rank)];
    for (long long chunk = 0; chunk < v; ++chunk) {
      const long long count = decoder[static_cast<std::size_t>(chunk * p + rank)];
      per_rank[static_cast<std::size_t>(rank)] += count;
      even_chunks = even_chunks && count == first_chunk;
    }
  }
  const long long middle = p > 2 ? per_rank[1] : 0;
  bool alike = true;
  for (long long rank = 1; rank + 1 < p; ++rank) {
    alike = alike && per_rank[static_cast<std::size_t>(rank)] == middle;
  }
  if (!even_chunks || !alike || per_rank.front() == 0 || per_rank.back() == 0) {
    std::string counts;
    for (std::size_t rank = 0; rank < per_rank.size(); ++rank) {
      counts += (rank == 0                     ? ""
                 : rank + 1 == per_rank.size() ? " and "
                                               : ", ") +
                std::to_string(per_rank[rank]);
    }
    flags.fault(flag, std::string(flag) + " puts " + counts +
                          " decoder layers on the pipeline ranks" +
                          (even_chunks ? "" : ", unevenly over a rank's virtual stages") +
                          ": the estimate holds the first and last ranks' layers with the ranks "
                          "between alike, each rank's split evenly over its virtual stages, and "
                          "a layer at least on each end.");
    return;
  }
  layout.virtual_pipeline_stages = static_cast<int>(v);
  const bool even = std::all_of(per_rank.begin(), per_rank.end(),
                                [&](long long count) { return count == per_rank.front(); });
  if (!even) {
    layout.pipeline_first_stage_layers = static_cast<int>(per_rank.front());
    layout.pipeline_last_stage_layers = static_cast<int>(per_rank.back());
  }
}

}  // namespace

// The layout: d from the world size over t·p·c, the pipeline's virtual and uneven stages, the
// distributed optimizer as ZeRO 1.
void read_layout(KeyReader& flags, long long world, long long layers, long long sequence,
                 ParallelLayout& layout) {
  const long long t = flags.get("--tensor-model-parallel-size", whole_number()).value_or(1);
  const long long p = flags.get("--pipeline-model-parallel-size", whole_number()).value_or(1);
  const long long c = flags.get("--context-parallel-size", whole_number()).value_or(1);
  // Each degree at most 2^16 before any product of them is formed (a product of three 12-digit
  // degrees passes 2^63).
  for (const auto& [flag, degree] :
       {std::pair<const char*, long long>{"--tensor-model-parallel-size", t},
        {"--pipeline-model-parallel-size", p},
        {"--context-parallel-size", c}}) {
    if (!flags.within(flag, degree, 1, kMaxParallelDegree)) return;
  }
  if (world == 0) {
    flags.fault("--tensor-model-parallel-size",
                "The data-parallel degree is the world size over t·p·c, and neither the line "
                "(torchrun's --nproc_per_node and --nnodes) nor --world-size gives it.");
  } else if (world % (t * p * c) != 0) {
    flags.fault("--tensor-model-parallel-size", "The world size " + std::to_string(world) +
                                                    " is not a whole multiple of t·p·c (" +
                                                    std::to_string(t * p * c) + ").");
  } else if (world / (t * p * c) > kMaxParallelDegree) {
    flags.fault("--tensor-model-parallel-size",
                "The world size " + std::to_string(world) + " over t·p·c (" +
                    std::to_string(t * p * c) + ") leaves more than " +
                    format_count(kMaxParallelDegree) + " data-parallel ranks.");
  }
  if (!flags.ok()) return;
  if (c > 1 && sequence % (2 * c) != 0) {
    flags.fault("--context-parallel-size",
                "--seq-length " + std::to_string(sequence) +
                    " is not a multiple of 2 × --context-parallel-size (" + std::to_string(2 * c) +
                    "), as Megatron-LM requires.");
    return;
  }
  layout = ParallelLayout{};
  layout.data_parallel = static_cast<int>(world / (t * p * c));
  layout.tensor_parallel = static_cast<int>(t);
  layout.pipeline_parallel = static_cast<int>(p);
  layout.context_parallel = static_cast<int>(c);
  layout.sequence_parallel = flags.has("--sequence-parallel");
  layout.zero_stage = flags.has("--use-distributed-optimizer") ? 1 : 0;
  // Expert parallelism, carved out of d·t·c; etp defaults to t (0 here: as t).
  for (const auto& [flag, degree] :
       {std::pair<const char*, int*>{"--expert-model-parallel-size", &layout.expert_parallel},
        {"--expert-tensor-parallel-size", &layout.expert_tensor_parallel}}) {
    if (const auto value = flags.get(flag, whole_number())) {
      if (!flags.within(flag, *value, 1, kMaxParallelDegree)) return;
      *degree = static_cast<int>(*value);
    }
  }
  if (const auto per_stage = flags.get("--num-layers-per-virtual-pipeline-stage", whole_number())) {
    if (*per_stage < 1 || layers % (p * *per_stage) != 0) {
      flags.fault("--num-layers-per-virtual-pipeline-stage",
                  "--num-layers-per-virtual-pipeline-stage must divide each stage's layers.");
    } else {
      layout.virtual_pipeline_stages = static_cast<int>(layers / (p * *per_stage));
    }
  }
  if (const auto stages = flags.get("--num-virtual-stages-per-pipeline-rank", whole_number())) {
    if (flags.has("--num-layers-per-virtual-pipeline-stage")) {
      flags.fault("--num-virtual-stages-per-pipeline-rank",
                  "--num-virtual-stages-per-pipeline-rank cannot stand beside "
                  "--num-layers-per-virtual-pipeline-stage, as Megatron-LM refuses: give one.");
    } else if (*stages < 1 || *stages > kMaxParallelDegree) {
      flags.fault("--num-virtual-stages-per-pipeline-rank",
                  "--num-virtual-stages-per-pipeline-rank must be 1 to " +
                      format_count(kMaxParallelDegree) + ".");
    } else {
      layout.virtual_pipeline_stages = static_cast<int>(*stages);
    }
  }
  for (const auto& [flag, stage_layers] :
       {std::pair<const char*, int*>{"--decoder-first-pipeline-num-layers",
                                     &layout.pipeline_first_stage_layers},
        {"--decoder-last-pipeline-num-layers", &layout.pipeline_last_stage_layers}}) {
    const auto count = flags.get(flag, whole_number());
    if (count && (*count < 1 || *count > layers)) {
      flags.fault(flag, std::string(flag) + " must be 1 to the model's " + std::to_string(layers) +
                            " layers.");
    } else if (count) {
      *stage_layers = static_cast<int>(*count);
    }
  }
  read_split_accounting(flags, layers, layout);
  read_pipeline_layout(flags, layers, layout);
  // ModelParallelConfig: p unless given; only the interleaved schedule reads it.
  const char* group_flag = "--microbatch-group-size-per-virtual-pipeline-stage";
  if (const auto group = flags.get(group_flag, whole_number())) {
    if (flags.within(group_flag, *group, 1, kMaxGlobalBatchSequences) &&
        layout.virtual_pipeline_stages > 1) {
      layout.microbatch_group_size = static_cast<int>(*group);
    }
  }
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

namespace {

// --hierarchical-context-parallel-sizes: sizes whose product is c (arguments.py and
// parallel_state.py assert it), the all-to-all group's first (Transformer Engine takes cp_group as
// [a2a group, p2p group]); Megatron-LM builds the groups whatever the exchange, and only a2a+p2p
// uses them. Returns the sizes, none where the line gives none or they are refused.
std::vector<long long> read_hierarchical_sizes(KeyReader& flags, long long c) {
  constexpr const char* kFlag = "--hierarchical-context-parallel-sizes";
  const auto text = flags.get(kFlag, flag_text());
  if (!text) return {};
  const auto whole = [](const std::string& word) {
    return !word.empty() && word.size() <= 5 &&
           std::all_of(word.begin(), word.end(),
                       [](unsigned char character) { return std::isdigit(character); });
  };
  std::vector<long long> sizes;
  long long product = 1;
  bool valid = true;
  for (const std::string& word : words_of(*text)) {
    valid = valid && whole(word) && std::stoll(word) >= 1;
    if (!valid) break;
    sizes.push_back(std::stoll(word));
    product = std::min(product * sizes.back(), 1LL << 40);
  }
  valid = valid && !sizes.empty();
  if (!valid || product != c) {
    flags.fault(kFlag, std::string(kFlag) +
                           " must be whole numbers whose product is --context-parallel-size (" +
                           std::to_string(c) + "), the all-to-all group's size first.");
    return {};
  }
  return sizes;
}

}  // namespace

// --cp-comm-type (arguments.py: nargs='+', default p2p): one type for every layer, or one a layer
// (TransformerConfig asserts as many as --num-layers under context parallelism). p2p, a2a and
// a2a+p2p (with --hierarchical-context-parallel-sizes, two of them) are modelled; allgather
// (AttnFuncWithCPAndKVAllGather) is not, nor layers of different types.
void read_cp_comm_type(KeyReader& flags, long long layers, TrainingSetup& setup,
                       std::vector<std::string>& notes) {
  const long long c = setup.layout.context_parallel;
  const std::vector<long long> sizes = read_hierarchical_sizes(flags, c);
  const auto text = flags.get("--cp-comm-type", flag_text());
  const std::vector<std::string> types = text ? words_of(*text) : std::vector<std::string>{};
  if (text && types.empty()) {
    flags.fault("--cp-comm-type",
                "--cp-comm-type needs a value: p2p (the default), a2a or "
                "a2a+p2p, once or once a layer.");
    return;
  }
  const std::string type = types.empty() ? std::string("p2p") : types.front();
  if (std::any_of(types.begin(), types.end(),
                  [&](const std::string& each) { return each != type; })) {
    flags.fault("--cp-comm-type",
                "--cp-comm-type gives the layers different exchanges, which is not modelled: one "
                "type for every layer, p2p (the default), a2a or a2a+p2p.");
    return;
  }
  if (types.size() > 1 && c > 1 && static_cast<long long>(types.size()) != layers) {
    flags.fault("--cp-comm-type", "--cp-comm-type gives " + std::to_string(types.size()) +
                                      " types: one for every layer, or one a layer (" +
                                      std::to_string(layers) +
                                      "), as Megatron-LM's TransformerConfig requires.");
    return;
  }
  if (type == "p2p") {
    setup.cp_comm_type = CpCommType::kP2p;
  } else if (type == "a2a") {
    setup.cp_comm_type = CpCommType::kA2a;
  } else if (type == "a2a+p2p") {
    setup.cp_comm_type = CpCommType::kA2aP2p;
    // Transformer Engine takes two groups (attn_forward_func_with_cp: "cp_group =
    // [a2a_cp_group, p2p_cp_group]").
    if (sizes.size() == 2) {
      setup.cp_a2a_size = static_cast<int>(sizes.front());
    } else if (flags.ok()) {
      flags.fault(sizes.empty() ? "--cp-comm-type" : "--hierarchical-context-parallel-sizes",
                  "--cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes of two "
                  "sizes (the all-to-all group's, then the ring's), as Megatron-LM and "
                  "Transformer Engine require.");
    }
  } else {
    flags.fault("--cp-comm-type", "--cp-comm-type " + type.substr(0, 20) +
                                      " is not modelled: p2p (the default), a2a or a2a+p2p.");
  }
  if (!sizes.empty() && type != "a2a+p2p") {
    notes.push_back(
        "--hierarchical-context-parallel-sizes: Megatron-LM builds the groups, which "
        "only --cp-comm-type a2a+p2p uses; the exchange is " +
        type + ", and the groups' communicators are not counted.");
  }
}

void read_megatron_fsdp(KeyReader& flags, TrainingSetup& setup, std::vector<std::string>& notes) {
  ParallelLayout& layout = setup.layout;
  // arguments.py asserts fsdp_dtensor and Megatron-FSDP together, each needing the other.
  const auto format = flags.get("--ckpt-format", flag_text());
  if (!flags.has("--use-megatron-fsdp")) {
    if (format == "fsdp_dtensor") {
      flags.fault("--ckpt-format",
                  "--ckpt-format fsdp_dtensor needs --use-megatron-fsdp, as Megatron-LM asserts.");
    }
    if (flags.has("--fsdp-double-buffer")) {
      flags.fault(
          "--fsdp-double-buffer",
          "--fsdp-double-buffer is Megatron-FSDP's: add --use-megatron-fsdp, or remove it.");
    }
    // Megatron-LM's DDP takes NCCL's user buffers too (distributed_data_parallel.py passes
    // nccl_ub to its buffers), which is not modelled.
    if (flags.has("--use-nccl-ub")) {
      flags.fault("--use-nccl-ub",
                  "--use-nccl-ub without Megatron-FSDP (DDP's buffers from NCCL's pool) is not "
                  "modelled: add --use-megatron-fsdp, or remove it.");
    }
    return;
  }
  // arguments.py: --data-parallel-sharding-strategy defaults to optim_grads_params, and
  // validate_args asserts --ckpt-format fsdp_dtensor beside --use-megatron-fsdp (and turns the
  // distributed optimiser on, its step over Megatron-FSDP's shards).
  const std::string strategy =
      flags.get("--data-parallel-sharding-strategy", flag_text()).value_or("optim_grads_params");
  if (strategy == "optim_grads_params") {
    layout.zero_stage = 3;
  } else if (strategy == "optim_grads") {
    layout.zero_stage = 2;
  } else {
    flags.fault("--data-parallel-sharding-strategy",
                "--data-parallel-sharding-strategy " + strategy.substr(0, 40) +
                    " is not modelled: optim_grads_params (the default, ZeRO 3) or optim_grads "
                    "(ZeRO 2).");
  }
  // Beside distributed optimiser instances Megatron-FSDP is hybrid (HSDP), each instance's states
  // whole across the others under --outer-dp-sharding-strategy no_shard, its default; optim
  // (HFSDP, the optimiser's state sharded across the instances too) is not modelled.
  const std::string outer =
      flags.get("--outer-dp-sharding-strategy", flag_text()).value_or("no_shard");
  if (outer != "no_shard") {
    flags.fault("--outer-dp-sharding-strategy",
                "--outer-dp-sharding-strategy " + outer.substr(0, 40) +
                    " is not modelled: no_shard (the default, HSDP over distributed optimiser "
                    "instances) is.");
  }
  // arguments.py raises on TE's single grouped expert weights beside Megatron-FSDP; the
  // overlapped expert-parallel communication changes how a mixture's parameters are gathered, which
  // the replay does not follow.
  for (const char* flag : {"--moe-single-grouped-weight", "--moe-single-grouped-bias"}) {
    if (flags.has(flag)) {
      flags.fault(flag, std::string(flag) +
                            " beside --use-megatron-fsdp is refused by Megatron-LM (arguments.py: "
                            "Megatron-FSDP does not support TE GroupedTensor parameters).");
    }
  }
  if (flags.has("--overlap-moe-expert-parallel-comm")) {
    flags.fault("--overlap-moe-expert-parallel-comm",
                "--overlap-moe-expert-parallel-comm beside --use-megatron-fsdp is not modelled: "
                "it changes how the mixture's parameters are gathered.");
  }
  if (!format) {
    flags.fault("--use-megatron-fsdp",
                "--use-megatron-fsdp needs --ckpt-format fsdp_dtensor, as Megatron-LM asserts.");
  } else if (*format != "fsdp_dtensor") {
    flags.fault("--ckpt-format", "--ckpt-format " + format->substr(0, 40) +
                                     " is not Megatron-FSDP's: Megatron-LM asserts fsdp_dtensor "
                                     "beside --use-megatron-fsdp.");
  }
  // Its dtypes: BF16 main gradients (auto: the parameters'), FP32 main weights.
  for (const auto& [flag, allowed] :
       {std::pair<const char*, const char*>{"--megatron-fsdp-main-grads-dtype", "auto"},
        {"--megatron-fsdp-grad-comm-dtype", "auto"},
        {"--megatron-fsdp-main-params-dtype", "fp32"}}) {
    const std::string value = flags.get(flag, flag_text()).value_or(allowed);
    if (value != allowed && !(value == "bf16" && std::string(allowed) == "auto")) {
      flags.fault(flag, std::string(flag) + " " + value.substr(0, 40) +
                            " is not modelled beside Megatron-FSDP: " + allowed + " is" +
                            (std::string(allowed) == "auto" ? " (the parameters' BF16)." : "."));
    }
  }
  if (flags.get("--megatron-fsdp-version", flag_text()).value_or("1") != "1") {
    flags.fault("--megatron-fsdp-version",
                "--megatron-fsdp-version 2 is not modelled: version 1, the default, is.");
  }
  // arguments.py: --use-nccl-ub and --megatron-fsdp-max-pool-double-buffer turn on the double
  // buffer (the first with manual registration), and --fsdp-manual-registration asserts
  // --use-nccl-ub. The max pool's slots are the largest unit's of each dtype (MaxPoolAllocator):
  // for a dense decoder, whose units are its identical layers, the fixed pool's.
  // MaxPoolAllocator pools every unit in slots of the largest's size, where the fixed pool keeps
  // the largest group alone and allocates the rest (a mixture's dense layers) as needed: the two
  // part ways over units of two sizes, which only the fixed pool's replay follows.
  if (flags.has("--megatron-fsdp-max-pool-double-buffer") &&
      mixes_dense_layers(setup.custom_model)) {
    flags.fault("--megatron-fsdp-max-pool-double-buffer",
                "--megatron-fsdp-max-pool-double-buffer over a mixture's dense and mixture layers "
                "(units of two sizes, each pooled at the largest's) is not modelled: "
                "--fsdp-double-buffer's fixed pool is.");
  }
  const bool nccl_ub = flags.has("--use-nccl-ub");
  setup.fsdp_double_buffer = flags.has("--fsdp-double-buffer") || nccl_ub ||
                             flags.has("--megatron-fsdp-max-pool-double-buffer");
  if (flags.has("--fsdp-manual-registration") && !nccl_ub) {
    flags.fault("--fsdp-manual-registration",
                "--fsdp-manual-registration needs --use-nccl-ub, as Megatron-LM asserts.");
  }
  if (nccl_ub) {
    notes.push_back(
        "--use-nccl-ub: Megatron-FSDP's shards and double buffer come from NCCL's registered "
        "pool (megatron/core/nccl_allocator.py, ncclMemAlloc through a torch.cuda.MemPool), the "
        "same bytes through PyTorch's allocator; the pool's page granularity and NVLS's "
        "multicast buffers, outside it, are not counted.");
  }
  for (const char* flag :
       {"--suggested-communication-unit-size", "--fsdp-db-use-persist-buf-on-alloc-fail"}) {
    if (flags.has(flag)) {
      flags.fault(flag, std::string(flag) +
                            " is not modelled: Megatron-FSDP's own prefetch window, or its "
                            "double buffer of two layers' slots, are.");
    }
  }
}

}  // namespace trainmem::megatron
