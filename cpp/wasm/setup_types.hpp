// The value types both WebAssembly modules pass across: a setup (with its layout and custom
// model) and the one shape of an answer. Registered once per module, from here. Choices held as
// enum classes cross as their ids, the strings the URL and the CLI use.
#pragma once

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>

#include "trainmem/answer.hpp"
#include "trainmem/models.hpp"
#include "trainmem/options.hpp"
#include "trainmem/setup.hpp"

namespace trainmem {

// A choice field as its id. An id that is not among its choices throws a JavaScript Error that
// names them (the JavaScript API checks each choice first and answers with the core's message).
template <typename Enum, Enum TrainingSetup::*field>
std::string get_choice(const TrainingSetup& setup) {
  return choice_id(setup.*field);
}
template <typename Enum, Enum TrainingSetup::*field>
void set_choice(TrainingSetup& setup, std::string id) {
  if (!choice_from_id(id, setup.*field)) {
    emscripten::val::global("Error")
        .new_(std::string("'" + id + "' is not one of " + ids_joined(choices<Enum>())))
        .throw_();
  }
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
      .field("sharedExpertFfnHiddenSize", &ModelShape::shared_expert_ffn_hidden_size)
      .field("sharedExpertGate", &ModelShape::shared_expert_gate)
      .field("routerBias", &ModelShape::router_bias)
      .field("numDenseLayers", &ModelShape::num_dense_layers)
      .field("moeLayerStep", &ModelShape::moe_layer_step)
      .field("qkNorm", &ModelShape::qk_norm)
      .field("qkNormWhole", &ModelShape::qk_norm_whole)
      .field("attentionSinks", &ModelShape::attention_sinks)
      .field("numMtpLayers", &ModelShape::num_mtp_layers)
      .field("qLoraRank", &ModelShape::q_lora_rank)
      .field("kvLoraRank", &ModelShape::kv_lora_rank)
      .field("qkNopeHeadDim", &ModelShape::qk_nope_head_dim)
      .field("qkRopeHeadDim", &ModelShape::qk_rope_head_dim)
      .field("vHeadDim", &ModelShape::v_head_dim)
      .field("family", &ModelShape::family)
      .field("visionParameters", &ModelShape::vision_parameters)
      .field("dropoutStated", &ModelShape::dropout_stated)
      .field("residualDropout", &ModelShape::residual_dropout)
      .field("probabilityDropout", &ModelShape::probability_dropout)
      .field("dropoutSaid", &ModelShape::dropout_said);

  value_object<ParallelLayout>("ParallelLayout")
      .field("dataParallel", &ParallelLayout::data_parallel)
      .field("zeroStage", &ParallelLayout::zero_stage)
      .field("tensorParallel", &ParallelLayout::tensor_parallel)
      .field("sequenceParallel", &ParallelLayout::sequence_parallel)
      .field("pipelineParallel", &ParallelLayout::pipeline_parallel)
      .field("virtualPipelineStages", &ParallelLayout::virtual_pipeline_stages)
      .field("pipelineFirstStageLayers", &ParallelLayout::pipeline_first_stage_layers)
      .field("pipelineLastStageLayers", &ParallelLayout::pipeline_last_stage_layers)
      .field("contextParallel", &ParallelLayout::context_parallel)
      .field("expertParallel", &ParallelLayout::expert_parallel)
      .field("expertTensorParallel", &ParallelLayout::expert_tensor_parallel);

  value_object<TrainingSetup>("TrainingSetup")
      .field("modelId", &TrainingSetup::model_id)
      .field("capacityFactor", &TrainingSetup::capacity_factor)
      .field("customModel", &TrainingSetup::custom_model)
      .field("sequenceLength", &TrainingSetup::sequence_length)
      .field("microBatchSequences", &TrainingSetup::micro_batch_sequences)
      .field("flashAttention", &TrainingSetup::flash_attention)
      .field("layout", &TrainingSetup::layout)
      .field("recompute", &get_choice<Recompute, &TrainingSetup::recompute>,
             &set_choice<Recompute, &TrainingSetup::recompute>)
      .field("activationModel", &get_choice<ActivationModel, &TrainingSetup::activation_model>,
             &set_choice<ActivationModel, &TrainingSetup::activation_model>)
      .field("dropout", &get_choice<Dropout, &TrainingSetup::dropout>,
             &set_choice<Dropout, &TrainingSetup::dropout>)
      .field("optimizer", &get_choice<Optimizer, &TrainingSetup::optimizer>,
             &set_choice<Optimizer, &TrainingSetup::optimizer>)
      .field("precision", &get_choice<Precision, &TrainingSetup::precision>,
             &set_choice<Precision, &TrainingSetup::precision>)
      .field("logits", &TrainingSetup::logits)
      .field("loss", &get_choice<Loss, &TrainingSetup::loss>,
             &set_choice<Loss, &TrainingSetup::loss>)
      .field("lossChunks", &TrainingSetup::loss_chunks)
      .field("mtp", &TrainingSetup::mtp)
      .field("trainVision", &TrainingSetup::train_vision)
      .field("deviceId", &TrainingSetup::device_id)
      .field("customCapacityGb", &TrainingSetup::custom_capacity_gb)
      .field("headroomPercent", &TrainingSetup::headroom_percent)
      .field("loraRank", &TrainingSetup::lora_rank)
      .field("loraTargets", &get_choice<LoraTargets, &TrainingSetup::lora_targets>,
             &set_choice<LoraTargets, &TrainingSetup::lora_targets>)
      .field("loraDropout", &TrainingSetup::lora_dropout)
      .field("baseWeights", &get_choice<BaseWeights, &TrainingSetup::base_weights>,
             &set_choice<BaseWeights, &TrainingSetup::base_weights>)
      .field("offload", &get_choice<Offload, &TrainingSetup::offload>,
             &set_choice<Offload, &TrainingSetup::offload>)
      .field("offloadActivations", &TrainingSetup::offload_activations)
      .field("hostCapacityGb", &TrainingSetup::host_capacity_gb)
      .field("stack", &get_choice<Stack, &TrainingSetup::stack>,
             &set_choice<Stack, &TrainingSetup::stack>)
      .field("fp8AllGather", &TrainingSetup::fp8_all_gather)
      .field("overlapComm", &get_choice<OverlapComm, &TrainingSetup::overlap_comm>,
             &set_choice<OverlapComm, &TrainingSetup::overlap_comm>)
      .field("makeVocabSizeDivisibleBy", &TrainingSetup::make_vocab_size_divisible_by)
      .field("eodToken", &TrainingSetup::eod_token)
      .field("cpCommType", &get_choice<CpCommType, &TrainingSetup::cp_comm_type>,
             &set_choice<CpCommType, &TrainingSetup::cp_comm_type>)
      .field("compile", &get_choice<Compile, &TrainingSetup::compile>,
             &set_choice<Compile, &TrainingSetup::compile>)
      .field("optimizerInBackward", &TrainingSetup::optimizer_in_backward)
      .field("pagedOptimizer", &TrainingSetup::paged_optimizer)
      .field("expandableSegments", &TrainingSetup::expandable_segments)
      .field("maxSplitSizeMb", &TrainingSetup::max_split_size_mb)
      .field("kbitPrep", &TrainingSetup::kbit_prep);
}

}  // namespace trainmem
