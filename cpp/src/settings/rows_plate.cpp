// The plate's own settings (setting_rows.hpp): the model, the sequence, the micro-batch and
// FlashAttention, and the logits and the loss, the rows the first view's module carries.
#include "settings/setting_rows.hpp"
#include "trainmem/models.hpp"

namespace trainmem::setting_rows {

namespace {

std::vector<Choice> model_choices() {
  std::vector<Choice> choices;
  for (const ModelShape& shape : preset_models()) {
    choices.push_back({shape.id, shape.name, shape.source});
  }
  return choices;
}

}  // namespace

// Each group's settings, in the table's order (the URL's and the page's).
// The plate's own: the model, the sequence, the micro-batch and FlashAttention.
void add_model_and_batch(Entries& entries) {
  const std::size_t first = entries.size();
  Entry model = row<&TrainingSetup::model_id>(id::kModel, "Model", "Model", "modelId");
  model.access.holds = [](const std::string& id) {
    return id == kCustomModelId || find_preset(id) != nullptr;
  };
  entries.push_back(model.among(model_choices()));
  entries.push_back(row<&TrainingSetup::sequence_length>(id::kSequenceLength, "Sequence length",
                                                         "Sequence length in tokens",
                                                         "sequenceLength")
                        .bounds(1, kMaxSequenceLength,
                                "Sequence length must be a whole number of tokens " +
                                    range_text(1, kMaxSequenceLength) + ".")
                        .with([](Setting& setting, Access&) { setting.keeps = id::kTokens; })
                        .page("batch", "Sequence length (tokens)"));
  // Tokens per micro-batch: the micro-batch again, in tokens, a whole multiple of the sequence
  // length (apply_setting reads it through micro_batch_from_tokens; no field of its own).
  Entry tokens;
  tokens.setting.id = id::kTokens;
  tokens.setting.name = "Tokens per micro-batch";
  tokens.setting.help = "Tokens per micro-batch: a whole multiple of the sequence length";
  tokens.access.number = [](const TrainingSetup& setup) {
    return static_cast<double>(setup.sequence_length) * setup.micro_batch_sequences;
  };
  tokens.bounds(1, static_cast<double>(kMaxSequenceLength) * kMaxMicroBatchSequences,
                "Tokens per micro-batch must be a whole multiple of the sequence length.");
  tokens.setting.excludes = id::kMicroBatch;
  entries.push_back(tokens);
  entries.push_back(row<&TrainingSetup::micro_batch_sequences>(id::kMicroBatch, "Micro-batch",
                                                               "Sequences per micro-batch",
                                                               "microBatchSequences")
                        .bounds(1, kMaxMicroBatchSequences,
                                "Micro-batch must hold a whole number of sequences " +
                                    range_text(1, kMaxMicroBatchSequences) + ".")
                        // Links give the tokens.
                        .with([](Setting& setting, Access&) { setting.in_url = false; }));
  entries.push_back(row<&TrainingSetup::flash_attention>(
      id::kFlashAttention, "FlashAttention",
      "FlashAttention: without it, keep the attention-score term", "flashAttention"));
  for (std::size_t index = first; index < entries.size(); ++index)
    entries[index].setting.plate = true;
}

// The logits and the loss, which the plate's view answers for: its readout says what counting them
// as a run computes them would add (with_logits_as_run), in the loss's words. Go further shows
// their controls (in the recipe).
void add_logits_and_loss(Entries& entries) {
  const std::size_t first = entries.size();
  const auto add = [&entries](Entry entry) { entries.push_back(std::move(entry)); };
  add(row<&TrainingSetup::logits>(id::kLogits, "Logits",
                                  "Count the output layer's logits and the loss", "logits")
          .page("recipe", "Logits and loss"));
  add(row<&TrainingSetup::loss>(id::kLoss, "Loss", "How the loss is computed", "loss")
          .among(choices<Loss>())
          .requires_value(id::kLogits, "on", "the loss is counted with the logits")
          .later()
          .page("recipe", "",
                "With the logits: Megatron-LM's vocab-parallel cross-entropy holds 6 bytes per "
                "logit; PyTorch's <code>cross_entropy(logits.float())</code> peaks at 12 (14 in "
                "transformers 4.46 to 4.48, which shifts a copy of the logits), torchtune's "
                "chunked one at 6 + 4/n, and Transformer Engine's fused one at 2. Liger's fused "
                "linear loss never makes the logits whole; torchtitan's and TRL's chunked ones, "
                "one chunk's at a time."));
  for (std::size_t index = first; index < entries.size(); ++index)
    entries[index].setting.plate = true;
}

}  // namespace trainmem::setting_rows
