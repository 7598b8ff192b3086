// SimuMax v1.2's B200 release set (measured_runs.hpp): Megatron-LM runs measured on 8 B200s, each
// set against the estimate under the megatron stack.
#include <string>

#include "model/units.hpp"
#include "trainmem/models.hpp"
#include "views/measured_runs.hpp"

namespace trainmem {

namespace {

// The runs' models, cut to a few layers as the runs cut them (--num-layers): Llama 3 70B to 12,
// 405B to 4; DeepSeek-V2 and V3 to 4, the first dense (--moe-layer-freq ([0]*1+[1]*3)), without
// DeepSeek-V3's multi-token prediction, and routed by a softmax (no router bias), as the runs'
// --moe-router-score-function softmax routes them.
// (SimuMax's 405B launcher gives it 16 query groups, where Llama 3 405B has 8 key/value heads.)
ModelShape cut_llama(const char* preset, int layers, int key_value_heads) {
  ModelShape shape = *find_preset(preset);
  shape.id = kCustomModelId;
  shape.name += ", " + std::to_string(layers) + " layers";
  shape.num_layers = layers;
  shape.num_key_value_heads = key_value_heads;
  return shape;
}

ModelShape cut_deepseek(bool v3) {
  ModelShape shape = *find_preset("deepseek-v3");
  shape.id = kCustomModelId;
  shape.num_layers = 4;
  shape.num_dense_layers = 1;
  shape.num_mtp_layers = 0;
  shape.router_bias = false;
  if (v3) {
    shape.name = "DeepSeek-V3, 4 layers";
    return shape;
  }
  // SimuMax's deepseekv2 launcher: h 5120, dense FFN 12288, 160 experts of 1536, top 6, two
  // shared experts (3072), vocabulary 102,400; the same latent attention.
  shape.name = "DeepSeek-V2, 4 layers";
  shape.hidden_size = 5120;
  shape.ffn_hidden_size = 12288;
  shape.num_experts = 160;
  shape.num_experts_per_token = 6;
  shape.moe_ffn_hidden_size = 1536;
  shape.shared_expert_ffn_hidden_size = 3072;
  shape.vocab_size = 102400;
  return shape;
}

struct Run {
  const char* name;  // the case's name in SimuMax's table
  ModelShape shape;
  int sequence_length;
  int t, p, ep, c, d;
  double allocated_mebibytes;  // the maximum over the eight ranks, as Megatron-LM logs it (MB)
  double reserved_mebibytes;
  // SimuMax's own estimate of the run, beside the measurement (perf_alloc_gib,
  // perf_peak_reserved_gib; GiB)
  double simumax_allocated_gibibytes;
  double simumax_reserved_gibibytes;
  // Whether the estimate misses the goal (2% allocated, 5% reserved); the notes say why.
  bool allocated_misses;
  bool reserved_misses;
};

// What each quantity's runs have in common, and why a run misses its goal, for every run of the
// quantity (the page groups runs under one note).
constexpr const char* kAllocatedWhy =
    "Not modelled: the blocks each operation makes and frees inside a layer's forward pass (the "
    "replay follows its saved tensors, the all-to-all's copies of those it exchanges, and in the "
    "backward pass one gradient for each). Why one 128K run is more than 2% over: the launchers "
    "leave the data loader's causal mask on (no --no-create-attention-mask-in-dataloader), and "
    "Megatron-LM's forward step holds its rows (4 GiB at c 4) while the loss runs, which moves "
    "the replay's peak from the backward pass to the loss, 2.4% above the run; the mask brings the "
    "three 128K runs' reserved peaks within 3%, so it is there, but the run holds about 3 GiB less "
    "at the loss than replayed. Which of the loss's tensors is counted twice needs the same run "
    "measured with the mask off";
constexpr const char* kReservedWhy =
    "The reserved peak is the most over the eight ranks, and the ranks differ where their "
    "allocated peaks do not (405B at c 8: 145 to 152 GiB): the distributed optimiser gives each "
    "rank one contiguous slice of Megatron-LM's parameter buffer, where the replay takes an even "
    "share of every tensor on one rank. The long-context runs' reserved peaks follow the data "
    "loader's mask, 16 GiB whole at 128K as each micro-batch arrives, before context parallelism "
    "keeps its share";

MeasuredCase run_case(const Run& run, bool reserved) {
  MeasuredCase measured;
  measured.id = std::string("simumax-b200-") + run.name + (reserved ? "-reserved" : "-allocated");
  measured.title = run.shape.name + ", " + std::to_string(run.sequence_length / 1024) +
                   "K tokens, t " + std::to_string(run.t) + " × p " + std::to_string(run.p) +
                   " × c " + std::to_string(run.c) + " × d " + std::to_string(run.d) +
                   (run.ep > 1 ? ", ep " + std::to_string(run.ep) : std::string()) +
                   (reserved ? ", reserved" : ", allocated");
  measured.citation = "SimuMax v1.2, Megatron-LM on 8 B200s with Transformer Engine 2.11";
  measured.source =
      std::string("MooreThreads/SimuMax 4dcaae5, docs/b200/b200_release_v1.2_summary.json, ") +
      run.name +
      " (peak_memory_by_rank_mb; Megatron-LM 23e00ed, core_r0.14.0; Transformer Engine "
      "2.11.0+c188b533; launchers simu_tools/megatron_scripts/run_llama3.sh and "
      "run_deepseekv2.sh)";
  measured.statistic = reserved ? "the most of torch.cuda.max_memory_reserved over the 8 ranks"
                                : "the most of torch.cuda.max_memory_allocated over the 8 ranks";
  measured.quantity = reserved ? MeasuredQuantity::kReserved : MeasuredQuantity::kAllocated;
  measured.unit = MeasuredUnit::kGibibytes;
  measured.measured_bytes =
      (reserved ? run.reserved_mebibytes : run.allocated_mebibytes) * kMebibyte;
  measured.goal_percent = reserved ? 5 : 2;
  TrainingSetup& setup = measured.setup;
  setup.stack = Stack::kMegatron;
  setup.model_id = kCustomModelId;
  setup.custom_model = run.shape;
  setup.sequence_length = run.sequence_length;
  setup.micro_batch_sequences = 1;  // --micro-batch-size 1, 4 micro-batches a step
  setup.flash_attention = true;
  ParallelLayout& layout = setup.layout;
  layout.tensor_parallel = run.t;
  layout.sequence_parallel = run.t > 1;  // --sequence-parallel, which Megatron-LM drops at t 1
  layout.pipeline_parallel = run.p;
  layout.expert_parallel = run.ep;
  layout.context_parallel = run.c;
  layout.data_parallel = run.d;
  layout.zero_stage = 1;          // --use-distributed-optimizer
  setup.dropout = Dropout::kOff;  // --attention-dropout 0 --hidden-dropout 0
  setup.logits = true;
  setup.loss = Loss::kTeFused;  // --cross-entropy-loss-fusion --cross-entropy-fusion-impl te
  setup.eod_token = true;       // --tokenizer-type NullTokenizer, core_r0.14.0: V + 1, padded
  setup.cp_comm_type = CpCommType::kA2a;  // the launcher's CP_COMM_TYPE=a2a
  // --moe-expert-capacity-factor 1 --moe-pad-expert-input-to-capacity: each expert's buffer
  // padded to its balanced share, so the memory does not follow the routing.
  if (run.ep > 1) setup.capacity_factor = 1;
  // The DeepSeek launcher's router (run_pretrain_deepseekv2.sh): --moe-router-score-function
  // softmax --moe-router-pre-softmax, --moe-router-num-groups ep --moe-router-group-topk 3,
  // --moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff 3e-3, and
  // --moe-permute-fusion.
  if (run.ep > 1) {
    setup.moe_router_score = RouterScore::kSoftmaxPre;
    setup.custom_model.num_expert_groups = run.ep;
    setup.custom_model.num_limited_groups = 3;
    setup.moe_aux_loss = true;
    setup.moe_permute_fusion = true;
  }
  setup.device_id = "b200";
  measured.note =
      std::string(
          "The launchers' settings: BF16 with FP32 gradient accumulation, the distributed "
          "optimiser, no recomputation, no dropout, FlashAttention, the TE fused cross-entropy "
          "(SimuMax's \"_cef\"), the NullTokenizer's vocabulary padded to 128 × t, mock data, one "
          "micro-batch of one sequence at a time. Measured over three steps, Adam's moments made "
          "in the first; the allocated peak is close across ranks, the reserved one differs by up "
          "to 7 GiB between ranks of one run. SimuMax v1.2's own estimate of each run, from the "
          "same table, stands beside trainmem's. ") +
      (reserved ? kReservedWhy : kAllocatedWhy);
  const bool misses = reserved ? run.reserved_misses : run.allocated_misses;
  measured.outside_goal = misses ? (reserved ? kReservedWhy : kAllocatedWhy) : "";
  measured.other_estimate_name = "SimuMax v1.2";
  measured.other_estimate_bytes =
      (reserved ? run.simumax_reserved_gibibytes : run.simumax_allocated_gibibytes) * kGibibyte;
  return measured;
}

}  // namespace

std::vector<MeasuredCase> simumax_b200_cases() {
  const ModelShape llama70 = cut_llama("llama3-70b", 12, 8);
  const ModelShape llama405 = cut_llama("llama3-405b", 4, 16);
  const ModelShape v2 = cut_deepseek(false);
  const ModelShape v3 = cut_deepseek(true);
  const Run runs[] = {
      {"llama3_70b_l12_tp1_pp2_dp4_mbc4_cef", llama70, 4096, 1, 2, 1, 1, 4, 68149.20, 72586, 66.44,
       70.68, false, false},
      {"llama3_70b_tp2_pp1_dp4_l12_mbc4_cef", llama70, 4096, 2, 1, 1, 1, 4, 62136.40, 64026, 60.51,
       64.38, false, false},
      {"llama3_70b_l12_tp4_pp1_dp2_mbc4_cef", llama70, 4096, 4, 1, 1, 1, 2, 40009.77, 41140, 38.94,
       41.43, false, false},
      {"llama3_70b_l12_tp8_pp1_dp1_mbc4_cef", llama70, 4096, 8, 1, 1, 1, 1, 28965.36, 29816, 28.17,
       29.96, false, false},
      {"deepseekv2_tp1_ep8_pp1_dp8_l4_mbc4_cef", v2, 4096, 1, 1, 8, 1, 8, 46730.00, 49962, 45.4,
       48.3, false, false},
      {"deepseekv2_tp1_ep4_pp2_dp4_l4_mbc4_cef", v2, 4096, 1, 2, 4, 1, 4, 45775.80, 48176, 44.37,
       47.21, false, false},
      {"deepseekv3_l4_tp1_ep8_pp1_dp8_mbc4_cef", v3, 4096, 1, 1, 8, 1, 8, 106803.80, 112824, 103.52,
       110.12, false, false},
      {"deepseekv3_l4_tp1_ep4_pp2_dp4_mbc4_cef", v3, 4096, 1, 2, 4, 1, 4, 116737.92, 121460, 113.08,
       120.29, false, false},
      {"llama3_405b_l4_tp1_pp2_dp4_mbc4_cef", llama405, 4096, 1, 2, 1, 1, 4, 89173.40, 94474, 86.88,
       92.43, false, false},
      {"llama3_405b_l4_tp2_pp1_dp4_mbc4_cef", llama405, 4096, 2, 1, 1, 1, 4, 83549.85, 86734, 81.31,
       86.5, false, false},
      {"llama3_405b_l4_tp4_pp1_dp2_mbc4_cef", llama405, 4096, 4, 1, 1, 1, 2, 54158.11, 55966, 52.68,
       56.04, false, false},
      {"llama3_405b_l4_tp8_pp1_dp1_mbc4_cef", llama405, 4096, 8, 1, 1, 1, 1, 39499.85, 40788, 38.38,
       40.83, false, false},
      {"llama3_70b_l12_tp2_cp4_pp1_dp1_seq32768_mbc4_cef", llama70, 32768, 2, 1, 1, 4, 1, 70070.56,
       72020, 68.16, 72.51, false, false},
      {"llama3_70b_l12_tp1_cp8_pp1_dp1_seq32768_mbc4_cef", llama70, 32768, 1, 1, 1, 8, 1, 107017.11,
       114626, 104.43, 111.1, false, false},
      {"llama3_405b_l4_tp2_cp4_pp1_dp1_seq32768_mbc4_cef", llama405, 32768, 2, 1, 1, 4, 1, 89113.80,
       93340, 86.55, 92.08, false, false},
      {"llama3_405b_l4_tp1_cp8_pp1_dp1_seq32768_mbc4_cef", llama405, 32768, 1, 1, 1, 8, 1,
       142557.52, 155790, 139.13, 148.01, false, false},
      {"llama3_70b_l12_tp2_cp4_pp1_dp1_seq131072_mbc4_cef", llama70, 131072, 2, 1, 1, 4, 1,
       115371.98, 124310, 111.8, 118.94, true, false},
      {"llama3_70b_l12_tp1_cp8_pp1_dp1_seq131072_mbc4_cef", llama70, 131072, 1, 1, 1, 8, 1,
       151539.40, 163480, 147.89, 157.33, false, false},
      {"llama3_405b_l4_tp2_cp4_pp1_dp1_seq131072_mbc4_cef", llama405, 131072, 2, 1, 1, 4, 1,
       120962.51, 130562, 116.5, 123.94, false, false},
  };
  std::vector<MeasuredCase> cases;
  for (const Run& run : runs) cases.push_back(run_case(run, false));
  for (const Run& run : runs) cases.push_back(run_case(run, true));
  return cases;
}

}  // namespace trainmem
