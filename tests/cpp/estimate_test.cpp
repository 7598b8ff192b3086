#include "trainmem/estimate.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "trainmem/explain.hpp"
#include "trainmem/format.hpp"
#include "trainmem/settings.hpp"

using namespace trainmem;

namespace estimate_test {

namespace {

TrainingSetup setup_for(const std::string& model_id, int micro_batch_sequences,
                        bool flash_attention) {
  TrainingSetup setup;
  setup.model_id = model_id;
  setup.micro_batch_sequences = micro_batch_sequences;
  setup.flash_attention = flash_attention;
  return setup;
}

}  // namespace

TEST_CASE(
    "the default setup is the plate's view: Llama 3 8B, one sequence of 8,192, FlashAttention") {
  const TrainingSetup setup;
  CHECK(setup.model_id == "llama3-8b");
  CHECK(setup.sequence_length == 8192);
  CHECK(setup.micro_batch_sequences == 1);
  CHECK(setup.flash_attention);
}

TEST_CASE("model states are 16 bytes per parameter, split 2 + 2 + 4 + 8") {
  const Estimate estimate = estimate_memory(TrainingSetup{});
  const double parameters = 8030261248.0;
  CHECK(estimate.bytes_per_parameter.weights == 2);
  CHECK(estimate.bytes_per_parameter.gradients == 2);
  CHECK(estimate.bytes_per_parameter.master_weights == 4);
  CHECK(estimate.bytes_per_parameter.optimizer_states == 8);
  CHECK(estimate.bytes_per_parameter.total == kModelStateBytesPerParameter);
  CHECK(estimate.bytes[Term::kWeights] == 2 * parameters);
  CHECK(estimate.bytes[Term::kGradients] == 2 * parameters);
  CHECK(estimate.bytes[Term::kMasterWeights] == 4 * parameters);
  CHECK(estimate.bytes[Term::kOptimizerStates] == 8 * parameters);
  CHECK(kModelStateBytesPerParameter == 16);
}

TEST_CASE("plate: Llama 3 8B's model states are 128.5 GB") {
  const Estimate estimate = estimate_memory(setup_for("llama3-8b", 1, true));
  REQUIRE(estimate.answer.status == Status::kOk);
  CHECK(estimate.bytes.model_states() == 16 * 8030261248.0);
  CHECK(format_bytes(estimate.bytes.model_states()) == "128.5 GB");
}

TEST_CASE(
    "plate: with FlashAttention at 8,192 tokens the 8B's activations are 36.5 GB, 165.0 GB in all, "
    "2.1 H100s") {
  const Estimate estimate = estimate_memory(setup_for("llama3-8b", 1, true));
  REQUIRE(estimate.answer.status == Status::kOk);
  // 34 · s · b · h · L = 34 · 8192 · 1 · 4096 · 32
  CHECK(estimate.bytes[Term::kActivations] == 36507222016.0);
  CHECK(format_bytes(estimate.bytes[Term::kActivations]) == "36.5 GB");
  CHECK(format_bytes(estimate.bytes.total()) == "165.0 GB");
  CHECK(estimate.devices_worth == doctest::Approx(164991401984.0 / 80e9));
  CHECK(std::round(estimate.devices_worth * 10) / 10 == 2.1);
  CHECK(estimate.device.capacity_bytes == 80e9);
  CHECK(estimate.tokens_per_micro_batch == 8192);
  CHECK(estimate.num_devices == 1);
  CHECK_FALSE(estimate.fits);
  CHECK(estimate.bytes[Term::kLogits] == 0);
}

TEST_CASE("plate: without FlashAttention the 8B needs 508.6 GB") {
  const Estimate estimate = estimate_memory(setup_for("llama3-8b", 1, false));
  REQUIRE(estimate.answer.status == Status::kOk);
  // The score term 5·a·s/h = 5 · 32 · 8192 / 4096 = 320 joins the 34.
  CHECK(estimate.bytes[Term::kActivations] == 354.0 * 8192 * 4096 * 32);
  CHECK(format_bytes(estimate.bytes.total()) == "508.6 GB");
}

TEST_CASE("plate: the 405B's states are 6.5 TB, about 88 H100s' worth with activations") {
  const Estimate estimate = estimate_memory(setup_for("llama3-405b", 1, true));
  REQUIRE(estimate.answer.status == Status::kOk);
  CHECK(format_bytes(estimate.bytes.model_states()) == "6.5 TB");
  CHECK(std::round(estimate.devices_worth) == 88);
}

TEST_CASE("plate: even the smallest Llama 3 needs over 100 GB") {
  for (const char* model_id : {"llama3-8b", "llama3-70b", "llama3-405b"}) {
    CAPTURE(model_id);
    CHECK(estimate_memory(setup_for(model_id, 1, true)).bytes.total() > 100e9);
  }
}

TEST_CASE("the terms sum to the total") {
  for (const ModelShape& shape : preset_models()) {
    for (int sequences : {1, 3, 16}) {
      for (bool flash : {true, false}) {
        const Breakdown b = estimate_memory(setup_for(shape.id, sequences, flash)).bytes;
        CHECK(b[Term::kWeights] + b[Term::kGradients] + b[Term::kMasterWeights] +
                  b[Term::kOptimizerStates] + b[Term::kActivations] + b[Term::kLogits] ==
              b.total());
      }
    }
  }
}

TEST_CASE("activations grow linearly with the sequences in a micro-batch, states do not") {
  const Estimate one = estimate_memory(setup_for("llama3-70b", 1, true));
  const Estimate four = estimate_memory(setup_for("llama3-70b", 4, true));
  CHECK(four.bytes[Term::kActivations] == 4 * one.bytes[Term::kActivations]);
  CHECK(four.bytes.model_states() == one.bytes.model_states());
  CHECK(four.tokens_per_micro_batch == 4 * 8192);
}

TEST_CASE("FlashAttention removes exactly the 5·a·s/h score term") {
  const double with_scores =
      estimate_memory(setup_for("llama3-70b", 2, false)).bytes[Term::kActivations];
  const double without_scores =
      estimate_memory(setup_for("llama3-70b", 2, true)).bytes[Term::kActivations];
  CHECK(with_scores - without_scores == 80 * 8192.0 * 2 * 8192 * (5.0 * 64 * 8192 / 8192));
}

TEST_CASE("an unknown model is refused with a message listing the allowed ids") {
  const Estimate estimate = estimate_memory(setup_for("gpt-2", 1, true));
  CHECK(estimate.answer.status == Status::kInvalidInput);
  CHECK(estimate.answer.message ==
        "Model 'gpt-2' is not known; choose one of " + preset_ids_joined() + ".");
  CHECK(estimate.bytes.total() == 0);
  CHECK(estimate.answer.setting == "model");
}

TEST_CASE("micro-batch sizes outside 1..65,536 sequences are refused") {
  for (int sequences : {0, -1, kMaxMicroBatchSequences + 1, std::numeric_limits<int>::max()}) {
    CAPTURE(sequences);
    const Estimate estimate = estimate_memory(setup_for("llama3-8b", sequences, true));
    CHECK(estimate.answer.status == Status::kInvalidInput);
    CHECK(estimate.answer.message ==
          "Micro-batch must hold a whole number of sequences from 1 to 65,536.");
    CHECK(estimate.answer.setting == "micro-batch");
  }
  CHECK(estimate_memory(setup_for("llama3-405b", kMaxMicroBatchSequences, false)).answer.status ==
        Status::kOk);
}

TEST_CASE("sequence lengths outside 1..1,048,576 are refused") {
  TrainingSetup setup;
  setup.sequence_length = 0;
  CHECK(estimate_memory(setup).answer.message ==
        "Sequence length must be a whole number of tokens from 1 to 1,048,576.");
  setup.sequence_length = kMaxSequenceLength + 1;
  CHECK(estimate_memory(setup).answer.status == Status::kInvalidInput);
}

TEST_CASE("the largest allowed inputs still give finite figures") {
  TrainingSetup setup = setup_for("llama3-405b", kMaxMicroBatchSequences, false);
  setup.sequence_length = kMaxSequenceLength;
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.status == Status::kOk);
  CHECK(std::isfinite(estimate.bytes.total()));
  CHECK(std::isfinite(estimate.devices_worth));
}

TEST_CASE(
    "tokens per micro-batch become sequences only when a whole multiple of the sequence length") {
  const MicroBatchFromTokens two = micro_batch_from_tokens(16384, 8192, 16);
  CHECK(two.answer.status == Status::kOk);
  CHECK(two.micro_batch_sequences == 2);
  CHECK(micro_batch_from_tokens(131072, 8192, 16).micro_batch_sequences == 16);

  const std::string message =
      "Tokens per micro-batch must be a whole multiple of 8,192 (one sequence), from 8,192 to "
      "131,072.";
  for (double tokens :
       {0.0, -8192.0, 1000.0, 8192.5, 139264.0, std::numeric_limits<double>::max(),
        std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()}) {
    CAPTURE(tokens);
    const MicroBatchFromTokens result = micro_batch_from_tokens(tokens, 8192, 16);
    CHECK(result.answer.status == Status::kInvalidInput);
    CHECK(result.answer.message == message);
    CHECK(result.micro_batch_sequences == 0);
  }
}

TEST_CASE("the workshop view holds the estimate and one activation point per micro-batch size") {
  const WorkshopView view = workshop_view(setup_for("llama3-8b", 3, true), 16);
  REQUIRE(view.estimate.answer.status == Status::kOk);
  REQUIRE(view.activation_curve.size() == 16);
  CHECK(view.activation_curve.front().tokens == 8192);
  CHECK(view.activation_curve.back().tokens == 131072);
  CHECK(view.activation_curve[2].flash_attention_bytes == view.estimate.bytes[Term::kActivations]);
  CHECK(view.activation_curve[0].flash_attention_bytes == 36507222016.0);
  CHECK(view.activation_curve[0].without_flash_attention_bytes == 354.0 * 8192 * 4096 * 32);
}

TEST_CASE("the room line is the estimate's room, flat without the logits") {
  const WorkshopView plate = workshop_view(TrainingSetup{}, 16);
  REQUIRE(plate.estimate.answer.ok());
  for (const ActivationPoint& point : plate.activation_curve) {
    CHECK(point.room_bytes == plate.estimate.activation_room_bytes);
  }
}

TEST_CASE("with the logits counted, the room line falls by what the logits grow with the tokens") {
  TrainingSetup setup;
  setup.model_id = "llama3.2-1b";
  setup.device_id = "b200";
  setup.logits = true;
  setup.micro_batch_sequences = 2;
  const WorkshopView view = workshop_view(setup, 16);
  REQUIRE(view.estimate.answer.ok());
  const double logits_per_sequence = 6.0 * 8192 * 128256;  // vocab-parallel: 6 B a logit
  const std::vector<ActivationPoint>& curve = view.activation_curve;
  CHECK(curve[1].room_bytes == view.estimate.activation_room_bytes);
  CHECK(curve[0].room_bytes == doctest::Approx(curve[1].room_bytes + logits_per_sequence));
  CHECK(curve[15].room_bytes == doctest::Approx(curve[1].room_bytes - 14 * logits_per_sequence));
}

TEST_CASE("the view says what leaving out the logits leaves out, counted as a run computes them") {
  const WorkshopView plate = workshop_view(TrainingSetup{}, 16);
  // Llama 3 8B at 8,192 tokens: an unfused FP32-upcast loss holds 12 B a logit (12.6 GB).
  CHECK(plate.logits_left_out_bytes == 12.0 * 8192 * 128256);
  CHECK(plate.logits_left_out_loss == Loss::kFp32Upcast);
  TrainingSetup megatron;
  megatron.stack = Stack::kMegatron;
  const WorkshopView under_megatron = workshop_view(megatron, 16);
  REQUIRE(under_megatron.estimate.answer.ok());
  CHECK(under_megatron.logits_left_out_loss == Loss::kVocabParallel);
  CHECK(under_megatron.logits_left_out_bytes > 0);
  TrainingSetup counted;
  counted.logits = true;
  CHECK(workshop_view(counted, 16).logits_left_out_bytes == 0);
}

TEST_CASE("logits as a run computes them: the stack's own loss, else an FP32 upcast") {
  const TrainingSetup plain = with_logits_as_run(TrainingSetup{});
  CHECK(plain.logits);
  CHECK(plain.loss == Loss::kFp32Upcast);
  TrainingSetup megatron;
  megatron.stack = Stack::kMegatron;
  CHECK(with_logits_as_run(megatron).loss == Loss::kVocabParallel);
  TrainingSetup torchtitan;
  torchtitan.stack = Stack::kTorchtitan;
  CHECK(with_logits_as_run(torchtitan).loss == Loss::kFp32Upcast);
}

TEST_CASE("an invalid setup gives a workshop view with the message and no curve") {
  const WorkshopView view = workshop_view(setup_for("nope", 1, true), 16);
  CHECK(view.estimate.answer.status == Status::kInvalidInput);
  CHECK(view.activation_curve.empty());
  CHECK(workshop_view(TrainingSetup{}, 0).estimate.answer.status == Status::kInvalidInput);
}

TEST_CASE("estimating never changes its input") {
  const TrainingSetup setup = setup_for("llama3-70b", 5, false);
  const TrainingSetup copy = setup;
  const Estimate estimate = estimate_memory(setup);
  CHECK(setup.model_id == copy.model_id);
  CHECK(setup.micro_batch_sequences == copy.micro_batch_sequences);
  CHECK(estimate.setup.micro_batch_sequences == 5);
  CHECK_FALSE(estimate.setup.flash_attention);
}

TEST_CASE("logits: a vocab-parallel loss holds 6 bytes per logit, an unfused FP32-upcast one 12") {
  TrainingSetup setup;
  setup.logits = true;
  const double logits = 8192.0 * 128256;
  CHECK(estimate_memory(setup).bytes[Term::kLogits] == 6 * logits);
  setup.loss = Loss::kFp32Upcast;
  const Estimate upcast = estimate_memory(setup);
  REQUIRE(upcast.answer.status == Status::kOk);
  CHECK(upcast.bytes[Term::kLogits] == 12 * logits);
  const auto terms = explain_estimate(setup);
  REQUIRE(terms.size() == 6);
  CHECK(terms[5].formula.rfind("12 B × 8,192 tokens × 128,256 vocabulary = ", 0) == 0);
  CHECK(terms[5].source.find("FP32-upcast") != std::string::npos);
  // Without the logits the loss changes nothing.
  setup.logits = false;
  CHECK(estimate_memory(setup).bytes.total() == estimate_memory(TrainingSetup{}).bytes.total());
}

TEST_CASE("an unknown loss is refused, naming the field and the choices") {
  TrainingSetup setup;
  const Answer answer = apply_setting(setup, "loss", "focal");
  CHECK(answer.status == Status::kInvalidInput);
  CHECK(answer.setting == "loss");
  CHECK(answer.message ==
        "Loss 'focal' is not known; choose one of vocab-parallel, fp32-upcast, native-fused, "
        "te-fused, chunked, fused-linear, fp32-shifted, chunked-nll, cut-cross-entropy, "
        "chunked-wrapper, grpo, dpo.");
}

TEST_CASE("a custom device is named by the capacity given, never rounded to another size") {
  TrainingSetup setup;
  setup.device_id = "custom";
  setup.custom_capacity_gb = 2.5;
  CHECK(estimate_memory(setup).device.name == "Custom 2.5 GB");
  setup.custom_capacity_gb = 80;
  CHECK(estimate_memory(setup).device.name == "Custom 80 GB");
  setup.custom_capacity_gb = 1536;
  CHECK(estimate_memory(setup).device.name == "Custom 1.54 TB");
}

TEST_CASE("the room left for activations is the usable memory less everything else held") {
  const Estimate plate = estimate_memory(TrainingSetup{});
  CHECK(plate.usable_bytes == 72e9);                               // 10% of 80 GB kept free
  CHECK(plate.activation_room_bytes == 72e9 - 16 * 8030261248.0);  // the states alone exceed it
  TrainingSetup sharded;
  sharded.layout.data_parallel = 8;
  sharded.layout.zero_stage = 3;
  sharded.logits = true;
  const Estimate estimate = estimate_memory(sharded);
  CHECK(estimate.activation_room_bytes ==
        doctest::Approx(72e9 - estimate.bytes.model_states() - estimate.bytes[Term::kLogits]));
  CHECK(estimate.activation_room_bytes > estimate.bytes[Term::kActivations]);  // and they fit
  // What the page's note names: what the device holds beside the activations, its parts, and
  // the headroom, each from the core.
  CHECK(plate.headroom_percent == 10);
  CHECK(plate.held_bytes == 16 * 8030261248.0);
  CHECK(plate.held_besides_bytes == 0);
  CHECK(estimate.held_bytes == estimate.bytes.total() - estimate.bytes[Term::kActivations]);
  CHECK(estimate.held_besides_bytes ==
        doctest::Approx(estimate.held_bytes - estimate.bytes.model_states() -
                        estimate.bytes[Term::kLogits]));
  TrainingSetup stacked;
  stacked.layout.data_parallel = 8;
  stacked.layout.zero_stage = 3;
  stacked.stack = Stack::kTorchtitan;
  const Estimate replayed = estimate_memory(stacked);
  REQUIRE(replayed.answer.ok());
  // Under a stack, its buffers, runtime and cache are held besides.
  CHECK(replayed.held_besides_bytes ==
        doctest::Approx(replayed.bytes[Term::kFramework] + replayed.bytes[Term::kRuntime] +
                        replayed.bytes[Term::kAllocatorCache]));
}

TEST_CASE("a layout fits when its total leaves the headroom free, which the reader can set") {
  TrainingSetup setup;  // 52.6 GB on each of 8 devices
  setup.layout.data_parallel = 8;
  setup.layout.zero_stage = 3;
  setup.device_id = "custom";
  setup.custom_capacity_gb = 55;
  const Estimate kept_free = estimate_memory(setup);
  CHECK(kept_free.devices_worth < 1);
  CHECK(kept_free.usable_bytes == doctest::Approx(49.5e9));
  CHECK_FALSE(kept_free.fits);
  setup.headroom_percent = 0;
  const Estimate none_free = estimate_memory(setup);
  CHECK(none_free.usable_bytes == 55e9);
  CHECK(none_free.fits);
  CHECK(none_free.bytes.total() == kept_free.bytes.total());
  CHECK(apply_setting(setup, "headroom", "95").message ==
        "Headroom must be a percentage from 0 to 90.");
}

TEST_CASE("a sequence past GPT-2's learned positions is refused, and one at them runs") {
  TrainingSetup setup;
  setup.model_id = "gpt2";
  const Estimate beyond = estimate_memory(setup);  // the plate's 8,192 tokens
  CHECK(beyond.answer.status == Status::kInvalidInput);
  CHECK(beyond.answer.setting == setting_id::kSequenceLength);
  CHECK(beyond.answer.message ==
        "GPT-2 124M has 1,024 learned positions: a sequence of 8,192 tokens is past them; its "
        "sequence length can be at most 1,024 tokens.");
  setup.sequence_length = 1024;
  const Estimate at = estimate_memory(setup);
  REQUIRE(at.answer.ok());
  CHECK(at.max_positions == 1024);
}

TEST_CASE(
    "a rotary model's max_position_embeddings travels with its estimate, and bounds nothing") {
  TrainingSetup setup;
  setup.sequence_length = 16384;  // past Meta-Llama-3-8B's 8,192: counted, and the page says so
  const Estimate estimate = estimate_memory(setup);
  REQUIRE(estimate.answer.ok());
  CHECK(estimate.max_positions == 8192);
  CHECK(find_preset("deepseek-v3")->max_positions == 163840);
}

TEST_CASE("under fp32 the estimate says its activations are counted at 16-bit sizes") {
  TrainingSetup setup;
  setup.precision = Precision::kFp32;
  const Estimate fp32 = estimate_memory(setup);
  REQUIRE(fp32.answer.ok());
  bool said = false;
  for (const std::string& note : fp32.notes) {
    said = said || note.find("counted at their 16-bit sizes") != std::string::npos;
  }
  CHECK(said);
  setup.precision = Precision::kBf16;
  CHECK(estimate_memory(setup).notes.empty());
}

}  // namespace estimate_test
