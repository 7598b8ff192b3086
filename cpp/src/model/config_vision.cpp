// A multimodal config's vision tower and projector, counted as transformers builds them beside the
// text tower: Gemma 3's SigLIP (SiglipVisionModel without its pooling head, and
// Gemma3MultiModalProjector), Mistral 3's Pixtral (PixtralVisionModel,
// Mistral3MultiModalProjector), Qwen2.5-VL's (Qwen2_5_VisionTransformerPretrainedModel with its
// merger), Llama 4's (Llama4VisionModel with its adapter, Llama4MultiModalProjector) and Gemma
// 4's (Gemma4VisionModel, Gemma4MultimodalEmbedder). Another tower is refused, naming the way to
// the text tower alone.
#include <string>

#include "model/config_fields.hpp"
#include "model/config_readers.hpp"
#include "model/config_text.hpp"

namespace trainmem {

namespace {

constexpr WholeField kVisionHidden = {"hidden_size", 1, kMaxModelWidth};
constexpr WholeField kVisionIntermediate = {"intermediate_size", 1, kMaxModelWidth};
constexpr WholeField kVisionLayers = {"num_hidden_layers", 1, kMaxModelLayers};
constexpr WholeField kVisionDepth = {"depth", 1, kMaxModelLayers};
constexpr WholeField kVisionHeads = {"num_attention_heads", 1, kMaxModelWidth};
constexpr WholeField kVisionHeadDim = {"head_dim", 1, kMaxModelWidth};
constexpr WholeField kImageSize = {"image_size", 1, 1 << 16};
constexpr WholeField kPatchSize = {"patch_size", 1, 1 << 10};
constexpr WholeField kTemporalPatchSize = {"temporal_patch_size", 1, 1 << 10};
constexpr WholeField kChannels = {"num_channels", 1, 64};
constexpr WholeField kInChans = {"in_chans", 1, 64};
constexpr WholeField kInChannels = {"in_channels", 1, 64};
constexpr WholeField kVisionPositions = {"num_position_embeddings", 1, kMaxPositionEmbeddings};
constexpr WholeField kSpatialMergeSize = {"spatial_merge_size", 1, 1 << 10};
constexpr WholeField kOutHiddenSize = {"out_hidden_size", 1, kMaxModelWidth};
constexpr WholeField kProjectorInputDim = {"projector_input_dim", 1, kMaxModelWidth};
constexpr WholeField kProjectorOutputDim = {"projector_output_dim", 1, kMaxModelWidth};
constexpr WholeField kVisionOutputDim = {"vision_output_dim", 1, kMaxModelWidth};
constexpr WholeField kVisionKeyValueHeads = {"num_key_value_heads", 1, kMaxModelWidth};
constexpr WholeField kPositionEmbeddingSize = {"position_embedding_size", 1,
                                               kMaxPositionEmbeddings};

// "in the vision tower: 'hidden_size' is missing; …"
std::string in_tower(const std::string& problem) {
  return problem.empty() ? problem : "in the vision tower (vision_config): " + problem;
}

// Gemma 3: SiglipVisionModel (its embeddings' patch convolution with a bias and N learned
// positions, Lv encoder layers of Q, K, V, O, fc1 and fc2 with biases and two LayerNorms, a final
// LayerNorm; no pooling head, vision_use_head being false) and the projector's
// mm_input_projection_weight (Hv x h) and mm_soft_emb_norm (Hv).
std::string siglip(const Json& vision, double text_hidden, double& parameters) {
  Problems problems;
  int hv = 0, iv = 0, layers = 0, image = 0, patch = 0, channels = 3;
  problems.add(read_required(vision, kVisionHidden, hv));
  problems.add(read_required(vision, kVisionIntermediate, iv));
  problems.add(read_required(vision, kVisionLayers, layers));
  problems.add(read_required(vision, kImageSize, image));
  problems.add(read_required(vision, kPatchSize, patch));
  problems.add(read_optional(vision, kChannels, channels));
  bool head = true;  // SiglipVisionConfig has no vision_use_head: the head is built unless false
  problems.add(read_boolean(vision, "vision_use_head", head));
  if (problems.any()) return problems.first();
  if (head) {
    return "'vision_use_head' must be false: trainmem does not count SigLIP's pooling head, "
           "which Gemma 3 leaves out.";
  }
  const double h = hv, i = iv, p = patch, positions = (image / patch) * (image / patch);
  const double layer = 4 * (h * h + h) + 4 * h + 2 * h * i + i + h;
  parameters =
      (h * channels * p * p + h) + positions * h + layers * layer + 2 * h + (h * text_hidden + h);
  return {};
}

// Mistral 3: PixtralVisionModel (patch_conv without a bias, ln_pre, Lv layers of two RMSNorms,
// Q, K, V, O of Hv x Hv and a gated MLP, none biased) and Mistral3MultiModalProjector (an RMSNorm
// of Hv, the patch merger's Hv·s² x Hv, linear_1 Hv x h and linear_2 h x h, biased when
// multimodal_projector_bias).
std::string pixtral(const Json& config, const Json& vision, double text_hidden,
                    double& parameters) {
  Problems problems;
  int hv = 0, iv = 0, layers = 0, patch = 0, channels = 3, heads = 0, head_dim = 0, merge = 2;
  problems.add(read_required(vision, kVisionHidden, hv));
  problems.add(read_required(vision, kVisionIntermediate, iv));
  problems.add(read_required(vision, kVisionLayers, layers));
  problems.add(read_required(vision, kPatchSize, patch));
  problems.add(read_optional(vision, kChannels, channels));
  problems.add(read_optional(vision, kVisionHeads, heads));
  problems.add(read_optional(vision, kVisionHeadDim, head_dim));
  problems.add(read_optional(config, kSpatialMergeSize, merge));
  bool bias = false;
  problems.add(read_boolean(config, "multimodal_projector_bias", bias));
  if (problems.any()) return in_tower(problems.first());
  if (heads > 0 && head_dim > 0 && static_cast<double>(heads) * head_dim != hv) {
    return "in the vision tower (vision_config): num_attention_heads times head_dim must equal "
           "hidden_size: trainmem counts Pixtral's projections as hidden_size wide.";
  }
  if (const Json* layer = present(config, "vision_feature_layer"); layer && !layer->is_number()) {
    return "'vision_feature_layer' must be one layer: trainmem does not count a projector over "
           "several.";
  }
  const double h = hv, i = iv, p = patch, t = text_hidden, m = merge;
  parameters = h * channels * p * p + h + layers * (2 * h + 4 * h * h + 3 * h * i) + h +
               h * m * m * h + h * t + t * t + (bias ? 2 * t : 0);
  return {};
}

// Qwen2.5-VL: the patch embedding (a 3-D convolution without a bias), `depth` blocks of two
// RMSNorms, a QKV and an output projection with biases and a gated MLP with biases, and the
// merger: an RMSNorm, an MLP of Hv·m² and out_hidden_size, both biased.
std::string qwen2_5_vl(const Json& vision, double& parameters) {
  Problems problems;
  int hv = 0, iv = 0, depth = 0, out = 0, patch = 14, temporal = 2, merge = 2, channels = 3;
  problems.add(read_required(vision, kVisionHidden, hv));
  problems.add(read_required(vision, kVisionIntermediate, iv));
  problems.add(read_required(vision, kVisionDepth, depth));
  problems.add(read_required(vision, kOutHiddenSize, out));
  problems.add(read_optional(vision, kPatchSize, patch));
  problems.add(read_optional(vision, kTemporalPatchSize, temporal));
  problems.add(read_optional(vision, kSpatialMergeSize, merge));
  problems.add(read_optional(vision, kInChans, channels));
  if (problems.any()) return in_tower(problems.first());
  const double h = hv, i = iv, p = patch, merged = h * merge * merge;
  const double block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * (i * h + i) + (h * i + h);
  parameters = h * channels * temporal * p * p + depth * block + h + (merged * merged + merged) +
               (merged * out + out);
  return {};
}

// Qwen3.5's vision tower (transformers' Qwen3_5VisionModel, Qwen3-VL's without deepstack
// mergers): a Conv3d patch embedding with a bias, num_position_embeddings learned positions,
// depth blocks of two LayerNorms, qkv and proj, and a plain MLP (fc1, fc2), all with biases, and
// the merger: a LayerNorm over h_v, then fc1 (h_v·m² square) and fc2 (h_v·m² x out_hidden_size)
// with biases. Deepstack mergers (deepstack_visual_indexes) are refused by name.
std::string qwen3_5_vision(const Json& vision, double& parameters) {
  Problems problems;
  int hv = 0, iv = 0, depth = 0, out = 0, positions = 0, patch = 16, temporal = 2, merge = 2,
      channels = 3;
  problems.add(read_required(vision, kVisionHidden, hv));
  problems.add(read_required(vision, kVisionIntermediate, iv));
  problems.add(read_required(vision, kVisionDepth, depth));
  problems.add(read_required(vision, kOutHiddenSize, out));
  problems.add(read_required(vision, kVisionPositions, positions));
  problems.add(read_optional(vision, kPatchSize, patch));
  problems.add(read_optional(vision, kTemporalPatchSize, temporal));
  problems.add(read_optional(vision, kSpatialMergeSize, merge));
  problems.add(read_optional(vision, kInChannels, channels));
  if (const Json* deepstack = present(vision, "deepstack_visual_indexes");
      deepstack != nullptr && !(deepstack->is_array() && deepstack->empty())) {
    problems.add("'deepstack_visual_indexes' must be [] (absent or null means none); it is " +
                 describe(*deepstack) + ": trainmem does not count deepstack mergers.");
  }
  if (problems.any()) return in_tower(problems.first());
  const double h = hv, i = iv, p = patch, merged = h * merge * merge;
  const double block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (i * h + i) + (h * i + h);
  parameters = h * channels * temporal * p * p + h + positions * h + depth * block + 2 * h +
               (merged * merged + merged) + (merged * out + out);
  return {};
}

// Llama 4: Llama4VisionModel (an unfolded patch projection without a bias, a class embedding,
// (image/P)² + 1 positions, pre and post LayerNorms, Lv layers of Q, K, V, O, fc1 and fc2 with
// biases and two LayerNorms, and the adapter's fc1 (Iv x projector_input_dim) and fc2
// (projector_output_dim²) without biases) and Llama4MultiModalProjector (vision_output_dim x h).
std::string llama4_vision(const Json& vision, double text_hidden, double& parameters) {
  Problems problems;
  int hv = 0, iv = 0, layers = 0, image = 0, patch = 0, channels = 3, adapter_in = 0,
      adapter_out = 0, output = 0;
  problems.add(read_required(vision, kVisionHidden, hv));
  problems.add(read_required(vision, kVisionIntermediate, iv));
  problems.add(read_required(vision, kVisionLayers, layers));
  problems.add(read_required(vision, kImageSize, image));
  problems.add(read_required(vision, kPatchSize, patch));
  problems.add(read_optional(vision, kChannels, channels));
  problems.add(read_required(vision, kProjectorInputDim, adapter_in));
  problems.add(read_required(vision, kProjectorOutputDim, adapter_out));
  problems.add(read_required(vision, kVisionOutputDim, output));
  if (problems.any()) return in_tower(problems.first());
  const double h = hv, i = iv, p = patch, positions = (image / patch) * (image / patch) + 1.0;
  const double layer = 4 * (h * h + h) + (i * h + i) + (h * i + h) + 4 * h;
  parameters = h * channels * p * p + h + positions * h + 4 * h + layers * layer + i * adapter_in +
               static_cast<double>(adapter_out) * adapter_out +
               static_cast<double>(output) * text_hidden;
  return {};
}

// Gemma 4: Gemma4VisionModel (modeling_gemma4.py): the patch embedder's input_proj
// (3·P² x Hv, no bias) and its position_embedding_table (2 x position_embedding_size x Hv); Lv
// encoder layers of Q (heads·d), K and V (kv heads·d), O, q_norm and k_norm of d (v_norm has no
// weight), a gated MLP of Iv and four RMSNorms; with standardize, std_bias and std_scale (Hv
// each, buffers the checkpoint holds); and Gemma4MultimodalEmbedder's embedding_projection
// (Hv x h, no bias; its norm has no weight). Gemma4VisionConfig's defaults where a field is
// absent. Clipped linears (four bounds a projection) are refused.
std::string gemma4_vision(const Json& vision, double text_hidden, double& parameters) {
  Problems problems;
  int hv = 768, iv = 3072, layers = 16, heads = 12, kv_heads = 12, head_dim = 64, patch = 16,
      positions = 10240;
  bool standardize = false;
  problems.add(read_optional(vision, kVisionHidden, hv));
  problems.add(read_optional(vision, kVisionIntermediate, iv));
  problems.add(read_optional(vision, kVisionLayers, layers));
  problems.add(read_optional(vision, kVisionHeads, heads));
  problems.add(read_optional(vision, kVisionKeyValueHeads, kv_heads));
  problems.add(read_optional(vision, kVisionHeadDim, head_dim));
  problems.add(read_optional(vision, kPatchSize, patch));
  problems.add(read_optional(vision, kPositionEmbeddingSize, positions));
  problems.add(read_boolean(vision, "standardize", standardize));
  problems.add(require_boolean(vision, "use_clipped_linears", false,
                               "Gemma 4's clipped linears (four bounds a projection)"));
  if (problems.any()) return in_tower(problems.first());
  const double h = hv, i = iv, d = head_dim, q = heads * d, kv = kv_heads * d;
  const double layer = h * q + 2 * h * kv + q * h + 2 * d + 3 * h * i + 4 * h;
  parameters = 3.0 * patch * patch * h + 2.0 * positions * h + layers * layer +
               (standardize ? 2 * h : 0) + h * text_hidden;
  return {};
}

}  // namespace

std::string read_vision_tower(const Json& config, VisionTower tower, double text_hidden,
                              double& parameters) {
  const Json* vision = present(config, "vision_config");
  if (tower == VisionTower::kGemma4) {
    // Gemma4Model builds a tower only for the configs it is given (vision_config, audio_config).
    if (present(config, "audio_config") != nullptr) {
      return "'audio_config' describes an audio tower that trainmem does not count; ask for the "
             "text tower alone (the CLI's --text-tower, the page's \"Text tower alone\").";
    }
    if (vision == nullptr) return {};
  }
  if (vision == nullptr && tower != VisionTower::kNone) {
    // transformers then builds its default tower (Gemma3Config: SiglipVisionConfig()), whose
    // size is not the checkpoint's to say.
    return "'vision_config' is missing; transformers would build its default vision tower, which "
           "is not counted: give the vision_config of the checkpoint.";
  }
  if (vision == nullptr) return {};
  if (!vision->is_object()) {
    return "'vision_config' must be an object; it is " + describe(*vision) + ".";
  }
  switch (tower) {
    case VisionTower::kSiglip:
      return in_tower(siglip(*vision, text_hidden, parameters));
    case VisionTower::kPixtral:
      return pixtral(config, *vision, text_hidden, parameters);
    case VisionTower::kQwen25Vl:
      return qwen2_5_vl(*vision, parameters);
    case VisionTower::kLlama4:
      return llama4_vision(*vision, text_hidden, parameters);
    case VisionTower::kQwen35:
      return qwen3_5_vision(*vision, parameters);
    case VisionTower::kGemma4:
      return gemma4_vision(*vision, text_hidden, parameters);
    case VisionTower::kNone:
      break;
  }
  const Json* type = present(*vision, "model_type");
  return "'vision_config' describes a vision tower" +
         (type != nullptr ? " (" + describe(*type) + ")" : std::string()) +
         " that trainmem does not count; ask for the text tower alone (the CLI's --text-tower, the "
         "page's \"Text tower alone\").";
}

}  // namespace trainmem
