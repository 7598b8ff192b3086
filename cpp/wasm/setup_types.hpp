// The value types both WebAssembly modules pass across: a setup (with its layout and custom
// model) and the one shape of an answer. Registered once per module, from here. Choices held as
// enum classes cross as their ids, the strings the URL and the CLI use.
#pragma once

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstddef>
#include <string>
#include <vector>

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// Throws a JavaScript error of the given type ("TypeError", "Error") that says `message`.
[[noreturn]] inline void throw_js(const char* type, const std::string& message) {
  emscripten::val::global(type).new_(message).throw_();
  __builtin_unreachable();
}

// A setup crosses as a plain JavaScript object whose fields are the table of settings' api keys
// (settings.hpp), "layout." ones inside `layout`, and its custom model as `customModel`: a
// setting added to the table crosses with no line here. Whole numbers, decimals and switches are
// numbers and booleans; a choice is its id.
inline emscripten::val setup_to_js(const TrainingSetup& setup) {
  using emscripten::val;
  val object = val::object();
  const std::vector<Setting>& table = settings();
  for (std::size_t index = 0; index < table.size(); ++index) {
    const Setting& setting = table[index];
    if (setting.api_key.empty()) continue;
    const std::size_t dot = setting.api_key.find('.');
    val holder = object;
    if (dot != std::string::npos) {
      const std::string parent = setting.api_key.substr(0, dot);
      if (object[parent].isUndefined()) object.set(parent, val::object());
      holder = object[parent];
    }
    const std::string key =
        dot == std::string::npos ? setting.api_key : setting.api_key.substr(dot + 1);
    if (setting.kind == SettingKind::kChoice) {
      holder.set(key, setting_text(setup, setting.id));
    } else if (setting.kind == SettingKind::kSwitch) {
      holder.set(key, setting_number(setup, index) != 0);
    } else {
      holder.set(key, setting_number(setup, index));
    }
  }
  object.set("customModel", setup.custom_model);
  return object;
}

// The setup a JavaScript object gives, every setting read at its api key. A field the table
// marks as added after the API was published may be missing (it keeps its default); any other
// missing field, a number where a choice's id belongs, a fraction where a whole number does or an
// id its choice does not hold throws a TypeError or an Error that names the field.
inline TrainingSetup setup_from_js(const emscripten::val& object) {
  using emscripten::val;
  if (object.isNull() || object.typeOf().as<std::string>() != "object") {
    throw_js("TypeError", "A setup must be an object");
  }
  TrainingSetup setup;
  const std::vector<Setting>& table = settings();
  for (std::size_t index = 0; index < table.size(); ++index) {
    const Setting& setting = table[index];
    if (setting.api_key.empty()) continue;
    const std::size_t dot = setting.api_key.find('.');
    val holder = object;
    if (dot != std::string::npos) {
      holder = object[setting.api_key.substr(0, dot)];
      if (holder.isUndefined() || holder.isNull()) {
        if (setting.defaulted_in_api) continue;
        throw_js("TypeError", "Missing field:  \"" + setting.api_key.substr(0, dot) + "\"");
      }
    }
    const std::string key =
        dot == std::string::npos ? setting.api_key : setting.api_key.substr(dot + 1);
    const val value = holder[key];
    if (value.isUndefined()) {
      if (setting.defaulted_in_api) continue;
      throw_js("TypeError", "Missing field:  \"" + key + "\"");
    }
    if (setting.kind == SettingKind::kChoice) {
      if (!value.isString()) {
        throw_js("TypeError", setting.api_key + " must be one of " + ids_joined(setting.choices));
      }
      const std::string id = value.as<std::string>();
      if (!set_setting_choice(setup, index, id)) {
        throw_js("Error", "'" + id + "' is not one of " + ids_joined(setting.choices));
      }
    } else if (setting.kind == SettingKind::kSwitch) {
      set_setting_number(setup, index, value.as<bool>() ? 1 : 0);
    } else if (!value.isNumber() || !set_setting_number(setup, index, value.as<double>())) {
      throw_js("TypeError", "Cannot convert \"" + value.call<std::string>("toString") + "\" to " +
                                (setting.kind == SettingKind::kWhole ? "int" : "double") + " for " +
                                setting.api_key);
    }
  }
  const val custom_model = object["customModel"];
  if (custom_model.isUndefined()) throw_js("TypeError", "Missing field:  \"customModel\"");
  setup.custom_model = custom_model.as<ModelShape>();
  return setup;
}

inline void register_setup_types() {
  using namespace emscripten;

  enum_<Status>("Status").value("OK", Status::kOk).value("INVALID_INPUT", Status::kInvalidInput);

  value_object<Answer>("Answer")
      .field("status", &Answer::status)
      .field("message", &Answer::message)
      .field("setting", &Answer::setting);

  value_object<ModelShape>("ModelShape")
      .field("id", &ModelShape::id)
      .field("name", &ModelShape::name)
      .field("source", &ModelShape::source)
      .field("numLayers", &ModelShape::num_layers)
      .field("hiddenSize", &ModelShape::hidden_size)
      .field("ffnHiddenSize", &ModelShape::ffn_hidden_size)
      .field("numAttentionHeads", &ModelShape::num_attention_heads)
      .field("numKeyValueHeads", &ModelShape::num_key_value_heads)
      .field("vocabSize", &ModelShape::vocab_size)
      .field("tiedEmbeddings", &ModelShape::tied_embeddings)
      .field("headDim", &ModelShape::head_dim)
      .field("attentionQkvBias", &ModelShape::attention_qkv_bias)
      .field("attentionOutputBias", &ModelShape::attention_output_bias)
      .field("mlpBias", &ModelShape::mlp_bias)
      .field("normsPerLayer", &ModelShape::norms_per_layer)
      .field("numExperts", &ModelShape::num_experts)
      .field("numExpertsPerToken", &ModelShape::num_experts_per_token)
      .field("gatedMlp", &ModelShape::gated_mlp)
      .field("normBias", &ModelShape::norm_bias)
      .field("numPositionEmbeddings", &ModelShape::num_position_embeddings)
      .field("maxPositions", &ModelShape::max_positions)
      .field("outputHeadBias", &ModelShape::output_head_bias)
      .field("parallelAttentionMlp", &ModelShape::parallel_attention_mlp)
      .field("moeFfnHiddenSize", &ModelShape::moe_ffn_hidden_size)
      .field("moeLatentSize", &ModelShape::moe_latent_size)
      .field("sharedExpertFfnHiddenSize", &ModelShape::shared_expert_ffn_hidden_size)
      .field("sharedExpertGate", &ModelShape::shared_expert_gate)
      .field("routerBias", &ModelShape::router_bias)
      .field("numDenseLayers", &ModelShape::num_dense_layers)
      .field("moeLayerStep", &ModelShape::moe_layer_step)
      .field("qkNorm", &ModelShape::qk_norm)
      .field("qkNormWhole", &ModelShape::qk_norm_whole)
      .field("attentionSinks", &ModelShape::attention_sinks)
      .field("clampedSwiglu", &ModelShape::clamped_swiglu)
      .field("numMtpLayers", &ModelShape::num_mtp_layers)
      .field("qLoraRank", &ModelShape::q_lora_rank)
      .field("kvLoraRank", &ModelShape::kv_lora_rank)
      .field("qkNopeHeadDim", &ModelShape::qk_nope_head_dim)
      .field("qkRopeHeadDim", &ModelShape::qk_rope_head_dim)
      .field("vHeadDim", &ModelShape::v_head_dim)
      .field("hybridLayers", &ModelShape::hybrid_layers)
      .field("linearNumKeyHeads", &ModelShape::linear_num_key_heads)
      .field("linearNumValueHeads", &ModelShape::linear_num_value_heads)
      .field("linearKeyHeadDim", &ModelShape::linear_key_head_dim)
      .field("linearValueHeadDim", &ModelShape::linear_value_head_dim)
      .field("linearConvKernelDim", &ModelShape::linear_conv_kernel_dim)
      .field("shortConvKernel", &ModelShape::short_conv_kernel)
      .field("shortConvBias", &ModelShape::short_conv_bias)
      .field("globalHeadDim", &ModelShape::global_head_dim)
      .field("globalKvHeads", &ModelShape::global_kv_heads)
      .field("globalKEqV", &ModelShape::global_k_eq_v)
      .field("keysAreValues", &ModelShape::keys_are_values)
      .field("valueNorm", &ModelShape::value_norm)
      .field("layerScalar", &ModelShape::layer_scalar)
      .field("finalLogitSoftcapping", &ModelShape::final_logit_softcapping)
      .field("attentionOutputGate", &ModelShape::attention_output_gate)
      .field("linearQkRepeated", &ModelShape::linear_qk_repeated)
      .field("linearNormUnfused", &ModelShape::linear_norm_unfused)
      .field("linearProjectionsSplit", &ModelShape::linear_projections_split)
      .field("kimiDeltaAttention", &ModelShape::kimi_delta_attention)
      .field("mamba2", &ModelShape::mamba2)
      .field("mamba1", &ModelShape::mamba1)
      .field("lightningBlockSize", &ModelShape::lightning_block_size)
      .field("mambaDtRank", &ModelShape::mamba_dt_rank)
      .field("mambaProjBias", &ModelShape::mamba_proj_bias)
      .field("linearConvBias", &ModelShape::linear_conv_bias)
      .field("mambaChunkSize", &ModelShape::mamba_chunk_size)
      .field("recurrentStateFp32", &ModelShape::recurrent_state_fp32)
      .field("indexNHeads", &ModelShape::index_n_heads)
      .field("indexHeadDim", &ModelShape::index_head_dim)
      .field("indexTopk", &ModelShape::index_topk)
      .field("family", &ModelShape::family)
      .field("visionParameters", &ModelShape::vision_parameters)
      .field("dropoutStated", &ModelShape::dropout_stated)
      .field("residualDropout", &ModelShape::residual_dropout)
      .field("probabilityDropout", &ModelShape::probability_dropout)
      .field("dropoutSaid", &ModelShape::dropout_said);
}

}  // namespace trainmem

// The setup crosses through setup_to_js and setup_from_js wherever it stands: an argument, an
// answer, or a field of a value object (an estimate's setup). Embind sees it as a JavaScript value.
namespace emscripten::internal {
template <>
struct TypeID<trainmem::TrainingSetup> {
  static constexpr TYPEID get() { return TypeID<val>::get(); }
};
template <>
struct TypeID<const trainmem::TrainingSetup> : TypeID<trainmem::TrainingSetup> {};
template <>
struct TypeID<trainmem::TrainingSetup&> : TypeID<trainmem::TrainingSetup> {};
template <>
struct TypeID<const trainmem::TrainingSetup&> : TypeID<trainmem::TrainingSetup> {};
template <>
struct TypeID<trainmem::TrainingSetup&&> : TypeID<trainmem::TrainingSetup> {};
template <>
struct BindingType<trainmem::TrainingSetup> {
  typedef EM_VAL WireType;
  static WireType toWireType(const trainmem::TrainingSetup& setup) {
    return BindingType<val>::toWireType(trainmem::setup_to_js(setup));
  }
  static trainmem::TrainingSetup fromWireType(WireType handle) {
    return trainmem::setup_from_js(BindingType<val>::fromWireType(handle));
  }
};
}  // namespace emscripten::internal
