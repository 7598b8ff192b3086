#include "trainmem/fit.hpp"

#include <doctest/doctest.h>

#include "trainmem/estimate.hpp"
#include "trainmem/report.hpp"
#include "trainmem/settings.hpp"
#include "views/fit_data_parallel.hpp"

using namespace trainmem;

namespace fit_test {

TEST_CASE("fewest devices: Llama 3 8B at 8,192 tokens needs two H100s, and one cannot do") {
  const FitSearch search = find_fewest_devices(TrainingSetup{}, 10);
  REQUIRE(search.answer.status == Status::kOk);
  CHECK(search.fewest_devices == 2);
  REQUIRE_FALSE(search.layouts.empty());
  for (const Estimate& layout : search.layouts) {
    CHECK(layout.num_devices == 2);
    CHECK(layout.fits);
    CHECK(layout.bytes.total() <= 80e9);
  }
  // Listed cheapest to run first, each with its cost and why.
  REQUIRE(search.costs.size() == search.layouts.size());
  for (std::size_t i = 1; i < search.layouts.size(); ++i) {
    CHECK(search.costs[i - 1].score <= search.costs[i].score);
  }
  for (const LayoutCost& cost : search.costs) CHECK_FALSE(cost.reason.empty());
  REQUIRE(search.has_best_smaller);
  CHECK(search.best_smaller.num_devices == 1);
  CHECK_FALSE(search.best_smaller.fits);
  CHECK(
      search.why_not_fewer ==
      "With fewer than 2 devices nothing fits: the leanest layout, on 1 device, still needs 131.7 "
      "GB on its most loaded device, over the 72.0 GB of one H100 80 GB (10% kept free).");
}

TEST_CASE("fewest devices: each layout found is valid and its device count is the minimum") {
  for (const char* model : {"llama3-70b", "llama3-405b"}) {
    CAPTURE(model);
    TrainingSetup setup;
    setup.model_id = model;
    setup.device_id = "h200";
    const FitSearch search = find_fewest_devices(setup, 5);
    REQUIRE(search.answer.status == Status::kOk);
    REQUIRE_FALSE(search.layouts.empty());
    for (const Estimate& layout : search.layouts) {
      CHECK(layout.answer.status == Status::kOk);
      CHECK(layout.fits);
      CHECK(layout.num_devices == search.fewest_devices);
      CHECK(layout.device.id == "h200");
    }
    REQUIRE(search.has_best_smaller);
    CHECK(search.best_smaller.num_devices < search.fewest_devices);
    CHECK_FALSE(search.best_smaller.fits);
    // Model states alone bound the count from below: 16·P over the device's capacity.
    CHECK(search.fewest_devices >= search.layouts.front().num_parameters * 16 / 141e9);
  }
}

TEST_CASE("fewest devices: a bad base setup is refused like an estimate") {
  TrainingSetup setup;
  setup.device_id = "tpu";
  const FitSearch search = find_fewest_devices(setup, 5);
  CHECK(search.answer.status == Status::kInvalidInput);
  CHECK(search.answer.setting == "device");
  CHECK(search.layouts.empty());
}

TEST_CASE("fewest devices: among equally few, the layout a practitioner would run comes first") {
  TrainingSetup setup;
  setup.model_id = "llama3-70b";
  const FitSearch search = find_fewest_devices(setup, 8);
  REQUIRE(search.answer.status == Status::kOk);
  CHECK(search.fewest_devices == 16);
  REQUIRE(search.layouts.size() >= 2);
  // t 8 with SP inside one node and c 2 (4,096 tokens per device) before c 16 (512 tokens each).
  const ParallelLayout& first = search.layouts.front().setup.layout;
  CHECK(first.tensor_parallel == 8);
  CHECK(first.context_parallel == 2);
  CHECK(search.costs.front().reason.find("t 8 within one 8-device node") != std::string::npos);
  for (std::size_t i = 0; i < search.layouts.size(); ++i) {
    if (search.layouts[i].setup.layout.context_parallel == 16) {
      CHECK(search.costs[i].reason.find(
                "512 tokens of the sequence per device, fewer than 4,096") != std::string::npos);
      CHECK(search.costs[i].score > search.costs.front().score + 50);
    }
  }
}

TEST_CASE("layout costs: each stated term, and plain data parallelism costs nothing") {
  TrainingSetup setup;
  setup.layout.data_parallel = 4;
  CHECK(layout_cost(estimate_memory(setup)).score == 0);
  CHECK(layout_cost(estimate_memory(setup)).reason ==
        "data parallelism alone: nothing beyond its all-reduce");
  setup.layout.tensor_parallel = 16;  // across two nodes
  setup.model_id = "llama3-70b";
  setup.layout.sequence_parallel = true;
  setup.layout.pipeline_parallel = 4;
  setup.recompute = Recompute::kFull;
  const LayoutCost cost = layout_cost(estimate_memory(setup));
  CHECK(cost.reason.find("t 16 spans nodes of 8") != std::string::npos);
  CHECK(cost.reason.find("a pipeline bubble of 16% of a step at 16 micro-batches") !=
        std::string::npos);  // 3 / 19
  CHECK(cost.reason.find("full recomputation runs each forward pass twice (+33)") !=
        std::string::npos);
  CHECK(cost.score == doctest::Approx(3 * 4 + 100 + 100.0 * 3 / 19 + 33));
}

TEST_CASE("fewest devices: DeepSeek-V3's search puts expert parallelism first") {
  TrainingSetup setup;
  setup.model_id = "deepseek-v3";
  const FitSearch search = find_fewest_devices(setup, 10);
  REQUIRE(search.answer.status == Status::kOk);
  // ZeRO-3 over 152 devices holds the fewest, but gathers all 256 experts of every layer each
  // pass; eight devices more take expert parallelism within a node, and less device time a step.
  CHECK(search.fewest_devices == 152);
  REQUIRE_FALSE(search.layouts.empty());
  const ParallelLayout& first = search.layouts.front().setup.layout;
  CHECK(first.expert_parallel > 1);
  CHECK(search.layouts.front().num_devices == 160);
  CHECK(search.costs.front().reason.find("8 devices more than the fewest") != std::string::npos);
  // The cheapest layout on the fewest devices is listed too, its ZeRO-3 gathers costed whole.
  bool fewest_listed = false;
  for (std::size_t i = 0; i < search.layouts.size(); ++i) {
    const Estimate& layout = search.layouts[i];
    CHECK(layout.fits);
    CHECK(layout.num_devices <= search.fewest_devices + kDevicesPerNode);
    if (layout.num_devices == search.fewest_devices) {
      fewest_listed = true;
      CHECK(search.costs[i].reason.find("(all 256 experts)") != std::string::npos);
    }
  }
  CHECK(fewest_listed);
}

TEST_CASE("fewest devices: a layout on more devices is listed only for less device time") {
  TrainingSetup setup;
  setup.model_id = "deepseek-v3";
  const FitSearch search = find_fewest_devices(setup, 10);
  REQUIRE(search.answer.status == Status::kOk);
  double fewest_device_time = 0;
  for (std::size_t i = 0; i < search.layouts.size(); ++i) {
    if (search.layouts[i].num_devices == search.fewest_devices) {
      fewest_device_time = search.fewest_devices * (1 + search.costs[i].score / 100);
    }
  }
  REQUIRE(fewest_device_time > 0);
  for (std::size_t i = 0; i < search.layouts.size(); ++i) {
    const double device_time = search.layouts[i].num_devices * (1 + search.costs[i].score / 100);
    CHECK(device_time <= fewest_device_time);
    if (i > 0) {
      CHECK(device_time >= search.layouts[i - 1].num_devices *
                               (1 + search.costs[i - 1].score / 100));  // least first
    }
  }
}

TEST_CASE("fewest devices: 126 layers split over p 16 as Llama 3 405B's were, 7 + 14 × 8 + 7") {
  TrainingSetup setup;
  setup.model_id = "llama3-405b";
  setup.stack = Stack::kMegatron;
  const FitSearch search = find_fewest_devices(setup, 5);
  REQUIRE(search.answer.status == Status::kOk);
  // 16 does not divide 126: before uneven stages the fewest was p 18 on 144 devices.
  CHECK(search.fewest_devices == 128);
  // Among the layouts on them (Megatron-FSDP beside a pipeline ranks first now), p 16.
  std::size_t found = search.layouts.size();
  for (std::size_t i = 0; i < search.layouts.size(); ++i) {
    if (search.layouts[i].setup.layout.pipeline_parallel == 16) found = i;
  }
  REQUIRE(found < search.layouts.size());
  const ParallelLayout& first = search.layouts[found].setup.layout;
  CHECK(first.pipeline_first_stage_layers == 7);
  CHECK(first.pipeline_last_stage_layers == 7);
  CHECK(format_layout(search.layouts[found].setup).find("p 16 (7 + 14 × 8 + 7 layers)") !=
        std::string::npos);
  CHECK(search.costs[found].reason.find(
            "uneven stages: the fullest holds 8 layers where 126 over 16 would be 7.9") !=
        std::string::npos);
}

TEST_CASE("layout costs: ZeRO-3 on a mixture gathers every expert it holds, not the k it uses") {
  TrainingSetup setup;
  setup.model_id = "mixtral-8x7b";
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  const ParameterCounts counts = parameter_counts(*find_preset("mixtral-8x7b"));
  // Per layer, the parts every token uses and the routed experts; a token uses 2 of the 8.
  const double shared = counts.attention_and_mlp_per_layer - counts.routed_experts_per_layer +
                        counts.replicated_per_layer + counts.norms_per_layer;
  const double routed = counts.routed_experts_per_layer;
  const double gathered = (shared + routed) / (shared + routed * 2 / 8);
  const LayoutCost whole = layout_cost(estimate_memory(setup));
  CHECK(whole.score == doctest::Approx(10 * gathered));
  CHECK(whole.reason.find("(all 8 experts)") != std::string::npos);
  // Over ep 4 each device holds 2 experts, and gathers no more than it computes with.
  setup.layout.expert_parallel = 4;
  const LayoutCost spread = layout_cost(estimate_memory(setup));
  CHECK(spread.score ==
        doctest::Approx(3 * 2 + 10 * (shared + routed / 4) / (shared + routed / 4)));
  CHECK(spread.reason.find("ep 4 within one 8-device node") != std::string::npos);
  CHECK(spread.reason.find("(its 2 experts of 8)") != std::string::npos);
}

TEST_CASE("layout costs: expert parallelism across nodes pays its all-to-alls unhidden") {
  TrainingSetup setup;
  setup.model_id = "deepseek-v3";
  setup.layout.data_parallel = 32;
  setup.layout.zero_stage = 1;
  setup.layout.expert_parallel = 16;
  const ParameterCounts counts = parameter_counts(*find_preset("deepseek-v3"));
  // DeepSeek-V3's 58 mixture layers' share of the compute per token (8 of 256 experts each), and
  // its 3 dense layers'.
  const double shared = counts.attention_and_mlp_per_layer - counts.routed_experts_per_layer +
                        counts.replicated_per_layer - counts.routed_experts_replicated_per_layer +
                        counts.norms_per_layer;
  const double mixture =
      58 *
      (shared +
       (counts.routed_experts_per_layer + counts.routed_experts_replicated_per_layer) * 8 / 256);
  const double dense = 3 * (counts.dense_attention_and_mlp_per_layer +
                            counts.dense_replicated_per_layer + counts.norms_per_layer);
  const LayoutCost cost = layout_cost(estimate_memory(setup));
  CHECK(cost.score == doctest::Approx(3 * 4 + 100 * mixture / (mixture + dense)));
  CHECK(cost.reason.find("ep 16 spans nodes of 8") != std::string::npos);
}

TEST_CASE(
    "fit: given the host's memory, the search tries offloading, and keeps to what the host holds") {
  TrainingSetup setup;  // Llama 3 8B, 8,192 tokens
  setup.device_id = "rtx-4090";
  const FitSearch on_device = find_fewest_devices(setup, 4);
  REQUIRE(on_device.answer.ok());
  CHECK(on_device.fewest_devices > 1);
  for (const Estimate& layout : on_device.layouts) CHECK(layout.setup.offload == Offload::kNone);

  setup.host_capacity_gb = 512;
  const FitSearch offloaded = find_fewest_devices(setup, 4);
  REQUIRE(offloaded.answer.ok());
  CHECK(offloaded.fewest_devices == 1);
  REQUIRE(!offloaded.layouts.empty());
  CHECK(offloaded.layouts[0].setup.offload != Offload::kNone);
  CHECK(offloaded.layouts[0].host_fits);
  CHECK(offloaded.costs[0].reason.find("PCIe") != std::string::npos);
  CHECK(format_layout(offloaded.layouts[0].setup).find(", offload optimizer") != std::string::npos);

  // A host too small for what it would hold: no offloaded layout.
  setup.host_capacity_gb = 1;
  const FitSearch small_host = find_fewest_devices(setup, 4);
  CHECK(small_host.fewest_devices == on_device.fewest_devices);
  for (const Estimate& layout : small_host.layouts) CHECK(layout.setup.offload == Offload::kNone);
}

// Llama 3 70B at 131,072 tokens under Megatron-LM on L4s, t 8 with sequence parallelism, over c,
// ZeRO-3.
TrainingSetup llama3_70b_on_l4s(int context_parallel) {
  TrainingSetup setup;
  setup.model_id = "llama3-70b";
  setup.sequence_length = 131072;
  setup.stack = Stack::kMegatron;
  setup.device_id = "l4";
  setup.layout.tensor_parallel = 8;
  setup.layout.sequence_parallel = true;
  setup.layout.context_parallel = context_parallel;
  setup.layout.zero_stage = 3;
  return setup;
}

// Llama 3 70B at 131,072 tokens under Megatron-LM on L4s, t 8 with sequence parallelism, c 32,
// ZeRO-3: the data loader's whole 131,072² mask and the caching allocator's replay. Up to d 8 the
// allocator keeps 14 to 16 GB of cache, so the total falls only from 38.4 to 37.5 GB from d 1 to
// d 2 (the cache growing from 14.5 to 15.6 GB), and the closed form from those two puts 36.6 GB
// beyond ZeRO's reach, over the L4's 21.3 GB usable: the search gave this layout up and answered
// 20,480 L4s for a run that fits on 1,280. By d 13 the cache is gone and the device holds 20.0 GB.
TEST_CASE("fewest devices: a layout whose allocator cache falls with d is found where it fits") {
  TrainingSetup setup = llama3_70b_on_l4s(32);
  const DataParallelFit found = smallest_data_parallel_that_fits(setup, kMaxDevices);
  REQUIRE(found.fits);
  const int d = found.estimate.setup.layout.data_parallel;
  CHECK(d > 1);
  CHECK(d <= 13);
  // The smallest: one d fewer does not fit.
  setup.layout.data_parallel = d - 1;
  const Estimate below = estimate_memory(setup);
  REQUIRE(below.answer.ok());
  CHECK_FALSE(below.fits);
  // Capped at its devices, the same d; capped below them, nothing.
  const DataParallelFit capped = smallest_data_parallel_that_fits(setup, 256.0 * d);
  REQUIRE(capped.fits);
  CHECK(capped.estimate.setup.layout.data_parallel == d);
  CHECK_FALSE(smallest_data_parallel_that_fits(setup, 256.0 * (d - 1)).fits);

  // With a global batch of 512 sequences only d dividing it is valid: the bisection's refused
  // middles are neither fits nor misses, and the answer is the least valid d that fits.
  setup.global_batch_sequences = 512;
  const DataParallelFit batched = smallest_data_parallel_that_fits(setup, kMaxDevices);
  REQUIRE(batched.fits);
  const int valid_d = batched.estimate.setup.layout.data_parallel;
  CHECK(valid_d == 16);
  for (int smaller = 1; smaller < valid_d; ++smaller) {
    setup.layout.data_parallel = smaller;
    const Estimate at = estimate_memory(setup);
    CHECK_FALSE((at.answer.ok() && at.fits));
  }
  // A batch with no valid d among the powers of two that fits: 24 takes d 1, 2, 3, 4, 6, 8, 12
  // and 24, and only 24 fits; 120 takes 15 (its divisors below, 1 to 12, do not fit). The search
  // once halved down from 65,536, met 8 and gave up.
  struct Batched {
    int batch;
    int expected;
  };
  for (const Batched& each : {Batched{24, 24}, Batched{120, 15}}) {
    const int batch = each.batch;
    const int expected = each.expected;
    setup.global_batch_sequences = batch;
    const DataParallelFit fit = smallest_data_parallel_that_fits(setup, kMaxDevices);
    REQUIRE_MESSAGE(fit.fits, batch);
    CHECK(fit.estimate.setup.layout.data_parallel == expected);
    for (int smaller = 1; smaller < expected; ++smaller) {
      if (batch % smaller != 0) continue;
      setup.layout.data_parallel = smaller;
      const Estimate at = estimate_memory(setup);
      REQUIRE(at.answer.ok());
      CHECK_FALSE(at.fits);
    }
  }
}

TEST_CASE("fewest devices: an odd global batch refuses d 2, where ZeRO's search starts") {
  // Llama 3 8B under ZeRO 3 without context parallelism starts at d 2, which a global batch of 15
  // refuses; d 3 is the first it takes, and does not fit; d 5 does (once: nothing found).
  TrainingSetup setup;
  setup.layout.zero_stage = 3;
  setup.global_batch_sequences = 15;
  const DataParallelFit fit = smallest_data_parallel_that_fits(setup, kMaxDevices);
  REQUIRE(fit.fits);
  CHECK(fit.estimate.setup.layout.data_parallel == 5);
  setup.layout.data_parallel = 2;
  CHECK(estimate_memory(setup).answer.setting == setting_id::kGlobalBatch);
  setup.layout.data_parallel = 3;
  const Estimate three = estimate_memory(setup);
  REQUIRE(three.answer.ok());
  CHECK_FALSE(three.fits);
}

TEST_CASE("fewest devices: a layout's line names the stack's term that outweighs its states") {
  // Megatron-LM at 131,072 tokens with c 16: the peak is the data loader's whole causal mask,
  // 131,072² bools, before the forward pass, above the layout's states and activations.
  TrainingSetup setup = llama3_70b_on_l4s(16);
  setup.layout.data_parallel = 12;
  setup.recompute = Recompute::kSelectiveOp;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE_MESSAGE(estimate.answer.ok(), estimate.answer.message);
  const StackTerm* largest = outweighing_stack_term(estimate);
  REQUIRE(largest != nullptr);
  CHECK(largest->label == "Data loader's attention masks (bool)");
  CHECK(largest->bytes > estimate.bytes.model_states() + estimate.bytes[Term::kActivations]);
  // Without the mask (--no-create-attention-mask-in-dataloader) no stack term outweighs them.
  setup.no_dataloader_attention_mask = true;
  CHECK(outweighing_stack_term(estimate_memory(setup)) == nullptr);
}

}  // namespace fit_test
