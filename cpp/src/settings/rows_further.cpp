// Every setting beyond the plate's (setting_rows.hpp): the layout, the recipe, the device,
// fine-tuning and the training stacks' own, each with its words, owners, rules and place on the
// page.
#include <cmath>

#include "settings/setting_rows.hpp"
#include "stacks/stack_rows.hpp"
#include "trainmem/decimal.hpp"
#include "trainmem/fine_tuning.hpp"
#include "trainmem/models.hpp"

namespace trainmem::setting_rows {

namespace {

// The rules of a stack's allocator settings: a stack's replay has an allocator; the idealised
// step has none.
bool replays(const TrainingSetup& setup) { return stack_row(setup.stack).replayed; }

}  // namespace

// The parallel layout.
void add_layout(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(std::move(entry)); };
  add(row<&ParallelLayout::data_parallel>(id::kDataParallel, "Data parallelism",
                                          "Data-parallel degree d", "layout.dataParallel")
          .degree()
          .page("layout", "Data parallel, <var>d</var>"));
  add(row<&ParallelLayout::zero_stage>(id::kZeroStage, "ZeRO stage",
                                       "ZeRO stage, sharded over d·c: " + each_of(0, kMaxZeroStage),
                                       "layout.zeroStage")
          .bounds(0, kMaxZeroStage, "ZeRO stage must be " + each_of(0, kMaxZeroStage) + ".")
          .fit()
          .page("layout", "ZeRO stage")
          .menu({"0 — nothing sharded", "1 — optimiser states", "2 — and gradients",
                 "3 — and weights"}));
  add(row<&ParallelLayout::tensor_parallel>(id::kTensorParallel, "Tensor parallelism",
                                            "Tensor-parallel degree t", "layout.tensorParallel")
          .degree()
          .page("layout", "Tensor parallel, <var>t</var>"));
  add(row<&ParallelLayout::sequence_parallel>(id::kSequenceParallel, "Sequence parallelism",
                                              "Sequence parallelism with tensor parallelism",
                                              "layout.sequenceParallel")
          .fit()
          .page("layout"));
  add(row<&ParallelLayout::pipeline_parallel>(id::kPipelineParallel, "Pipeline parallelism",
                                              "Pipeline-parallel degree p, 1F1B",
                                              "layout.pipelineParallel")
          .degree()
          .page("layout", "Pipeline parallel, <var>p</var>"));
  add(row<&ParallelLayout::virtual_pipeline_stages>(
          id::kVirtualPipelineStages, "Virtual pipeline stages",
          "Virtual stages per device: the interleaved schedule", "layout.virtualPipelineStages")
          .degree()
          .page("layout", "Virtual stages per device"));
  // Megatron-LM's --microbatch-group-size-per-virtual-pipeline-stage.
  add(row<&ParallelLayout::microbatch_group_size>(
          id::kMicrobatchGroupSize, "Micro-batches a virtual stage runs in a row",
          "Megatron-LM's --microbatch-group-size-per-virtual-pipeline-stage under the "
          "interleaved schedule: the micro-batches each virtual stage runs in a row, which the "
          "warm-up holds (0: p)",
          "layout.microbatchGroupSize")
          .bounds(0, kMaxGlobalBatchSequences,
                  "The micro-batches a virtual stage runs in a row must be a whole number from 0 "
                  "(p) to " +
                      format_count(kMaxGlobalBatchSequences) + ".")
          .only_under({Stack::kMegatron},
                      "--microbatch-group-size-per-virtual-pipeline-stage is Megatron-LM's",
                      "--microbatch-group-size-per-virtual-pipeline-stage is Megatron-LM's; "
                      "choose the megatron stack, or 0.")
          .rule([](const TrainingSetup& setup) { return setup.layout.virtual_pipeline_stages > 1; },
                "The micro-batches a virtual stage runs in a row are the interleaved schedule's: "
                "set more than 1 virtual stage, or 0.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.layout.microbatch_group_size >= setup.layout.pipeline_parallel;
              },
              "The micro-batches a virtual stage runs in a row must be p at least, as "
              "Megatron-LM's schedules.py requires; choose p or more, or 0.")
          .later()
          .page("layout", "Micro-batches a virtual stage runs in a row (0: p)"));
  // Megatron-LM's --global-batch-size: the micro-batches a step, which bound those in flight.
  add(row<&TrainingSetup::global_batch_sequences>(
          id::kGlobalBatch, "Global batch",
          "Sequences an optimiser step over the d replicas; under a pipeline, global ÷ "
          "(micro-batch × d) micro-batches a step bound those in flight (0: a full pipeline)",
          "globalBatchSequences")
          .bounds(0, kMaxGlobalBatchSequences,
                  "Global batch must be a whole number of sequences from 0 (a full pipeline) to " +
                      format_count(kMaxGlobalBatchSequences) + ".")
          .rule([](const TrainingSetup& setup) { return !stack_row(setup.stack).torch_pipelining; },
                "torchtitan's pipeline runs training.local_batch_size ÷ "
                "parallelism.pipeline_parallel_microbatch_size micro-batches a step, counted as p; "
                "a global batch adds gradient accumulation around its steps, which holds no more. "
                "Set the global batch to 0.")
          .later()
          .page("layout", "Global batch, sequences (0: a full pipeline)"));
  // Megatron-LM's --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers.
  const auto stage_layers = [](Entry entry, const char* label) {
    const std::string name = entry.setting.name;
    return entry
        .bounds(0, kMaxParallelDegree,
                name + " must be a whole number from 0 (the even split) to " +
                    format_count(kMaxParallelDegree) + ".")
        .later()
        .fit()
        .page("layout", label);
  };
  add(stage_layers(row<&ParallelLayout::pipeline_first_stage_layers>(
                       id::kPipelineFirstLayers, "First pipeline stage's layers",
                       "Layers on the first pipeline stage; the stages without a count of their "
                       "own split the rest evenly (0: an even share)",
                       "layout.pipelineFirstStageLayers"),
                   "First stage's layers (0: even)"));
  add(stage_layers(row<&ParallelLayout::pipeline_last_stage_layers>(
                       id::kPipelineLastLayers, "Last pipeline stage's layers",
                       "Layers on the last pipeline stage; the stages without a count of their "
                       "own split the rest evenly (0: an even share)",
                       "layout.pipelineLastStageLayers"),
                   "Last stage's layers (0: even)"));
  add(row<&TrainingSetup::pipeline_stage>(
          id::kStage, "Pipeline stage",
          "The pipeline stage answered: 1 to p from the first, -1 to -p from the last (-1: the "
          "last, where the loss is); 0: the most loaded. The verdict is the most loaded's",
          "pipelineStage")
          .bounds(-kMaxParallelDegree, kMaxParallelDegree,
                  "Pipeline stage must be a whole number: 1 to p from the first, -1 to -p from "
                  "the last, or 0 for the most loaded.")
          .later()
          .page("layout", "Pipeline stage answered (0: the most loaded; −1: the last)"));
  add(row<&ParallelLayout::context_parallel>(id::kContextParallel, "Context parallelism",
                                             "Context-parallel degree c", "layout.contextParallel")
          .degree()
          .page("layout", "Context parallel, <var>c</var>"));
  add(row<&ParallelLayout::expert_parallel>(id::kExpertParallel, "Expert parallelism",
                                            "Expert-parallel degree ep: the routed experts spread "
                                            "over ep of the d·t·c devices",
                                            "layout.expertParallel")
          .degree()
          .later()
          .page("layout", "Expert parallel, <var>ep</var>"));
  add(row<&ParallelLayout::expert_tensor_parallel>(
          id::kExpertTensorParallel, "Expert tensor parallelism",
          "Expert tensor-parallel degree etp: each routed expert split over etp; 0 means t",
          "layout.expertTensorParallel")
          .bounds(0, kMaxParallelDegree,
                  "Expert tensor parallelism must be a whole number from 0 (as tensor "
                  "parallelism) to " +
                      format_count(kMaxParallelDegree) + ".")
          .later()
          .fit()
          .page("layout", "Expert tensor parallel, <var>etp</var> (0: as <var>t</var>)"));
  add(row<&TrainingSetup::capacity_factor>(id::kCapacityFactor, "Capacity factor",
                                           "Each expert's token buffer as a multiple of balanced "
                                           "routing's (0: dropless, at balanced load)",
                                           "capacityFactor")
          .bounds(0, kMaxCapacityFactor,
                  "Capacity factor must be a number from 0 (dropless) to " +
                      format_count(kMaxCapacityFactor) + ".")
          .later()
          .page("layout", "Experts' capacity factor (0: dropless)"));
}

// The recipe: recomputation, the activation model, dropout, the optimiser and the precision.
void add_recipe(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(std::move(entry)); };
  add(row<&TrainingSetup::recompute>(id::kRecompute, "Recomputation", "Activation recomputation",
                                     "recompute")
          .among(choices<Recompute>())
          .fit()
          .page("recipe", "Activation recomputation"));
  add(row<&TrainingSetup::activation_model>(id::kActivationModel, "Activation model",
                                            "Activation model", "activationModel")
          .among(choices<ActivationModel>())
          .later()
          .page("recipe", "",
                "The plate uses Korthikanti's GPT-block model. Counted tensor by tensor, a Llama "
                "block run by fused kernels saves <span "
                "data-figure=\"llama-block-activations-8b\">…</span> for Llama&nbsp;3 8B at 8,192 "
                "tokens, against the plate's <span data-figure=\"activations-8b\">…</span>: other "
                "tensors, nearly the same sum. See the arithmetic below."));
  add(row<&TrainingSetup::dropout>(
          id::kDropout, "Dropout",
          "Dropout on the residuals and the attention probabilities: model, off, on, or its "
          "probability (0 is off, above 0 on; the masks' bytes do not depend on it)",
          "dropout")
          .among(choices<Dropout>())
          .later()
          .with([](Setting& setting, Access& access) {
            setting.allowed = "Dropout must be model, off, on, or a probability from 0 to below 1.";
            access.read_as = [](std::string_view text) {
              const double p = parse_decimal(text);
              if (!(p >= 0 && p < 1)) return std::string(text);
              return choice_id(p == 0 ? Dropout::kOff : Dropout::kOn);
            };
          })
          .page("recipe", "",
                "Korthikanti's GPT block drops out; Llama trains without. Each dropout keeps a "
                "1-byte mask per value, whatever its probability."));
  add(row<&TrainingSetup::optimizer>(id::kOptimizer, "Optimizer", "Optimizer", "optimizer")
          .among(choices<Optimizer>())
          .page("recipe", "Optimiser"));
  add(row<&TrainingSetup::precision>(id::kPrecision, "Precision", "Precision", "precision")
          .among(choices<Precision>())
          .page("recipe"));
  // Transformer Engine's FP8 recipe (Megatron-LM's --fp8-recipe).
  add(row<&TrainingSetup::fp8_recipe>(id::kFp8Recipe, "FP8 recipe",
                                      "Transformer Engine's FP8 recipe under fp8-mixed",
                                      "fp8Recipe")
          .among(choices<Fp8Recipe>())
          .requires_value(id::kPrecision, "fp8-mixed", "the recipe is fp8-mixed's")
          .rule([](const TrainingSetup& setup) { return setup.precision == Precision::kFp8Mixed; },
                "The FP8 recipe is fp8-mixed's: choose that precision, or the delayed recipe.")
          // Under torchtitan FP8 is torchao's: its tensorwise Float8Linear (the default recipe's
          // place) or its MXFP8Linear (the "mx" converter).
          .rule(
              [](const TrainingSetup& setup) {
                return transformer_engine_fp8(setup) || torchao_mxfp8(setup);
              },
              "The delayed, tensorwise and blockwise recipes are Transformer Engine's (the "
              "ideal step, the megatron stack); torchtitan's FP8 is torchao's, its tensorwise "
              "Float8 (the delayed recipe here) or MXFP8. Choose the delayed or mxfp8 recipe.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.fp8_recipe != Fp8Recipe::kMxfp8 ||
                       device_of(setup).architecture == Architecture::kBlackwell;
              },
              "MXFP8 runs on Blackwell's tensor cores (the B200 and B300); choose the delayed or "
              "tensorwise recipe, or one of those devices.")
          // quantization.py, _compute_fp8_block_scaling_support: compute capability 9.0 on.
          .rule(
              [](const TrainingSetup& setup) {
                const Architecture architecture = device_of(setup).architecture;
                return setup.fp8_recipe != Fp8Recipe::kBlockwise ||
                       architecture == Architecture::kHopper ||
                       architecture == Architecture::kBlackwell ||
                       architecture == Architecture::kBlackwellSm120;
              },
              "Blockwise FP8 runs on compute capability 9.0 and up (Hopper and Blackwell); choose "
              "the delayed or tensorwise recipe, or one of those devices.")
          .later()
          .page("recipe", "FP8 recipe (fp8-mixed)"));
  constexpr const char* kFp8ParamGatherRefusal =
      "--fp8-param-gather is Megatron-LM's, under fp8-mixed and its distributed optimiser "
      "(ZeRO 1); choose those, or turn it off.";
  add(row<&TrainingSetup::fp8_param_gather>(
          id::kFp8ParamGather, "FP8 parameters",
          "Megatron-LM's --fp8-param-gather under fp8-mixed: the linear layers' weights are FP8 "
          "tensors, with no BF16 copy, gathered in FP8 by the distributed optimiser or "
          "Megatron-FSDP",
          "fp8ParamGather")
          .only_under({Stack::kMegatron}, "--fp8-param-gather is Megatron-LM's",
                      kFp8ParamGatherRefusal)
          .rule([](const TrainingSetup& setup) { return setup.precision == Precision::kFp8Mixed; },
                kFp8ParamGatherRefusal)
          // megatron/training/arguments.py: "--fp8-param-gather only supported with distributed
          // optimizer, torch fsdp2, megatron fsdp, or inference mode".
          .rule([](const TrainingSetup& setup) { return setup.layout.zero_stage >= 1; },
                "Megatron-LM gathers FP8 parameters only through its distributed optimiser: set "
                "ZeRO 1 (--use-distributed-optimizer), or turn --fp8-param-gather off.")
          // multi_token_prediction.py builds its layers under the FP8 context too; the estimate
          // counts them in BF16, without FP8 copies.
          .rule([](const TrainingSetup& setup) { return !setup.mtp; },
                "FP8 parameters with multi-token prediction are not modelled: Megatron-LM builds "
                "the MTP modules' weights in FP8 too. Turn one of them off.")
          .later()
          .page("recipe", "",
                "Megatron-LM's --fp8-param-gather: the linear weights are FP8 parameters, with "
                "no BF16 copy."));
  add(row<&TrainingSetup::nvfp4_bf16_tail>(
          id::kNvfp4Bf16Tail, "NVFP4's BF16 tail",
          "Under nvfp4-mixed, the share of the decoder's last layers kept in BF16: ceil(L × "
          "share) of them (torchtitan's recipe keeps 0.15)",
          "nvfp4Bf16Tail")
          .bounds(0, 1, "NVFP4's BF16 tail must be a share of the layers from 0 to below 1.")
          .with([](Setting& setting, Access&) { setting.max_exclusive = true; })
          .requires_value(id::kPrecision, "nvfp4-mixed", "the tail is nvfp4-mixed's")
          .rule(
              [](const TrainingSetup& setup) { return setup.precision == Precision::kNvfp4Mixed; },
              "NVFP4's BF16 tail is nvfp4-mixed's: choose that precision, or the tail 0.15.")
          .later()
          .page("recipe", "NVFP4's BF16 tail (share of the layers)",
                "torchtitan converts the leading layers' linear layers to NVFP4 and keeps the "
                "last 15% and the output layer in BF16."));
}

// After the logits and the loss (the plate's, rows_plate.cpp): the loss's chunks, what the model
// trains beside its layers, and the device and its headroom.
void add_loss_chunks_and_device(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(std::move(entry)); };
  add(row<&TrainingSetup::loss_chunks>(id::kLossChunks, "Loss chunks",
                                       "The chunked losses' chunks: torchtune's "
                                       "num_output_chunks, torchtitan's num_chunks",
                                       "lossChunks")
          .bounds(1, kMaxLossChunks)
          .requires_values(id::kLoss, {choice_id(Loss::kChunked), choice_id(Loss::kChunkedWrapper)},
                           "the chunks are the chunked losses'")
          .later()
          .page("recipe", "Loss chunks, <var>n</var>"));
  add(row<&TrainingSetup::mtp>(
          id::kMtp, "Multi-token prediction",
          "Train the model's multi-token-prediction modules (DeepSeek-V3's, GLM-4.5's)", "mtp")
          .later()
          .page("recipe", "",
                "DeepSeek-V3's and GLM-4.5's extra layer, trained with its own logits and loss."));
  add(row<&TrainingSetup::train_vision>(
          id::kTrainVision, "Train the vision tower",
          "Train a multimodal model's vision tower and projector; frozen otherwise", "trainVision")
          .later()
          .page("model", "", "Frozen otherwise: its weights alone."));
  add(row<&TrainingSetup::device_id>(id::kDevice, "Device", "Device", "deviceId")
          .among(device_choices())
          .page("device"));
  add(row<&TrainingSetup::custom_capacity_gb>(id::kDeviceCapacity, "Custom capacity",
                                              "A custom device's memory in GB (10^9 bytes)",
                                              "customCapacityGb")
          .bounds(0, kMaxCustomCapacityGb,
                  "A custom device's memory must be more than 0 GB and at most " +
                      format_count(kMaxCustomCapacityGb) + " GB.")
          .requires_value(id::kDevice, kCustomDeviceId, "a capacity is given for the custom device")
          .with([](Setting& setting, Access&) {
            setting.min_exclusive = true;
            setting.excludes = id::kDevice;
          })
          .page("device", "Custom memory (GB)"));
  add(row<&TrainingSetup::headroom_percent>(
          id::kHeadroom, "Headroom",
          "Percent of each device's memory kept free when asking whether it fits",
          "headroomPercent")
          .bounds(
              0, kMaxHeadroomPercent,
              "Headroom must be a percentage from 0 to " + format_count(kMaxHeadroomPercent) + ".")
          .later()
          .page("device", "Headroom kept free (%)",
                "A layout fits when its total leaves this share of the device free: the ideal "
                "step leaves out the allocator's reserve, the CUDA context and communication "
                "buffers, which a training stack counts."));
}

// Fine-tuning (fine_tuning.hpp), added after the API was published: a setup without it trains
// every parameter, on the device, as before.
void add_fine_tuning(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(entry.later()); };
  add(row<&TrainingSetup::lora_rank>(
          id::kLoraRank, "LoRA rank",
          "LoRA's rank r: adapters train, the base is frozen (0: every parameter trains)",
          "loraRank")
          .bounds(0, kMaxLoraRank,
                  "LoRA rank must be a whole number from 0 (no LoRA) to " +
                      format_count(kMaxLoraRank) + ".")
          .page("fine-tuning", "LoRA rank, <var>r</var>",
                "0 trains every parameter. Above 0 the base is frozen, holding its weights only, "
                "and the adapters alone keep gradients, master weights and optimiser state."));
  add(row<&TrainingSetup::lora_targets>(id::kLoraTargets, "LoRA targets",
                                        "The layers LoRA's adapters sit on", "loraTargets")
          .among(choices<LoraTargets>())
          .page("fine-tuning"));
  add(row<&TrainingSetup::lora_dropout>(
          id::kLoraDropout, "LoRA dropout",
          "PEFT's lora_dropout: above 0 each adapter saves a dropped copy of its input and a "
          "1-byte mask",
          "loraDropout")
          .bounds(0, kMaxLoraDropout, "LoRA dropout must be a probability from 0 to below 1.")
          .with([](Setting& setting, Access&) { setting.max_exclusive = true; })
          .page("fine-tuning", "LoRA dropout, <var>p</var>",
                "PEFT's <code>lora_dropout</code>: above 0 each adapter keeps its own dropped "
                "copy of its input."));
  add(row<&TrainingSetup::base_weights>(id::kBaseWeights, "Base weights",
                                        "How LoRA's frozen base linear weights are held",
                                        "baseWeights")
          .among(choices<BaseWeights>())
          .page("fine-tuning", "",
                "With LoRA: QLoRA's NF4 holds 0.516 bytes per weight (bitsandbytes' blocks of 64, "
                "their scales in 8 bits); the embeddings and output layer stay BF16."));
  add(row<&TrainingSetup::offload>(id::kOffload, "Offload",
                                   "What is held in the host's memory instead of the device's",
                                   "offload")
          .among(choices<Offload>())
          .page("fine-tuning", "Offload to the host"));
  add(row<&TrainingSetup::offload_activations>(
          id::kOffloadActivations, "Offload activations",
          "Hold the saved activations in the host's memory but the layers in flight",
          "offloadActivations")
          .page("fine-tuning"));
  add(row<&TrainingSetup::host_capacity_gb>(
          id::kHostCapacity, "Host memory",
          "The host's memory per node in GB (10^9 bytes), shared by its devices: what offloading "
          "holds is checked against it (0: not checked)",
          "hostCapacityGb")
          .bounds(0, kMaxHostCapacityGb,
                  "Host memory must be from 0 (not checked) to " +
                      format_count(kMaxHostCapacityGb) + " GB.")
          .page("fine-tuning", "Host memory per node, GB",
                "Shared by the node's devices (up to 8): does it hold what they offload? 0 leaves "
                "it unchecked."));
}

// The training stack.
void add_stack(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(entry.later()); };
  add(row<&TrainingSetup::stack>(
          id::kStack, "Stack",
          "What trains the model: the idealised step, or a framework's real holdings", "stack")
          .among(choices<Stack>())
          .page("stack", "",
                "The ideal step counts the terms above and nothing else. A framework adds what it "
                "really holds, the runtime and the allocator's cache, and gives the peaks PyTorch "
                "reports. torchtune's recipes (one device, or FSDP2 as ZeRO 3), and transformers' "
                "Trainer with PEFT (one device, DDP, or FSDP as ZeRO 3), load the model in bf16: "
                "bf16 precision "
                "(the hf stack also bf16-mixed: the model in FP32 under autocast, for full "
                "training). PEFT keeps the adapters in FP32."));
}

// torchtitan's, DeepSpeed's and Megatron-LM's own switches, and torch.compile, each under the
// stacks that have it.
void add_distributed_switches(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(entry.later()); };
  constexpr const char* kFp8AllGatherRefusal =
      "FP8 all-gather is torchtitan's (FSDP2's) switch under FP8 training; choose the torchtitan "
      "stack and fp8-mixed precision, or turn it off.";
  add(row<&TrainingSetup::fp8_all_gather>(
          id::kFp8AllGather, "FP8 all-gather",
          "torchtitan under fp8-mixed: FSDP2 gathers the linear weights in FP8", "fp8AllGather")
          .only_under({Stack::kTorchtitan}, "FSDP2's FP8 all-gather is torchtitan's switch",
                      kFp8AllGatherRefusal)
          .rule([](const TrainingSetup& setup) { return setup.precision == Precision::kFp8Mixed; },
                kFp8AllGatherRefusal)
          // torchtitan's mxfp8.md: "All distributed communication for MXFP8 training is currently
          // done in high precision."
          .rule([](const TrainingSetup& setup) { return !torchao_mxfp8(setup); },
                "torchao's MXFP8 gathers its weights in BF16; FP8 all-gather is its tensorwise "
                "Float8's. Choose the delayed recipe (tensorwise), or turn FP8 all-gather off.")
          .page("stack", "",
                "torchtitan under fp8-mixed: FSDP2 gathers the linear weights in FP8."));
  add(row<&TrainingSetup::overlap_comm>(id::kOverlapComm, "Overlap communication",
                                        "DeepSpeed's overlap_comm: the gradient reduction "
                                        "overlapped with the backward pass",
                                        "overlapComm")
          .among(choices<OverlapComm>())
          .only_under({Stack::kDeepSpeed}, "overlap_comm is DeepSpeed's switch",
                      "overlap_comm is DeepSpeed's switch; choose the deepspeed stack, or default.")
          .page("stack", "DeepSpeed's overlap_comm"));
  // DeepSpeed's buckets (stacks/stack_deepspeed.cpp replays each).
  constexpr const char* kBucketReason = "DeepSpeed's buckets are its own";
  constexpr const char* kBucketRefusal =
      "DeepSpeed's bucket sizes and persistence threshold are its own; choose the deepspeed stack, "
      "or leave them at DeepSpeed's defaults (5e8, 5e7, 1e5).";
  const std::string bucket_bounds = "from 1 to " + format_count(kMaxDeepSpeedBucket) + " elements.";
  add(row<&TrainingSetup::zero_reduce_bucket>(
          id::kReduceBucket, "Reduce bucket (elements)",
          "DeepSpeed's reduce_bucket_size: the gradients reduced at once, in elements (default "
          "5e8; transformers fills \"auto\" with h²)",
          "zeroReduceBucket")
          .bounds(1, kMaxDeepSpeedBucket, "The reduce bucket must be " + bucket_bounds)
          .only_under({Stack::kDeepSpeed}, kBucketReason, kBucketRefusal)
          .later()
          .page("stack", "DeepSpeed's reduce_bucket_size (elements)"));
  add(row<&TrainingSetup::zero_prefetch_bucket>(
          id::kPrefetchBucket, "Prefetch bucket (elements)",
          "DeepSpeed's stage3_prefetch_bucket_size under ZeRO 3: the parameters gathered ahead, in "
          "elements (default 5e7; transformers fills \"auto\" with 0.9·h²)",
          "zeroPrefetchBucket")
          .bounds(1, kMaxDeepSpeedBucket, "The prefetch bucket must be " + bucket_bounds)
          .only_under({Stack::kDeepSpeed}, kBucketReason, kBucketRefusal)
          .later()
          .page("stack", "DeepSpeed's stage3_prefetch_bucket_size (elements)"));
  add(row<&TrainingSetup::zero_persistence_threshold>(
          id::kPersistenceThreshold, "Persistence threshold (elements)",
          "DeepSpeed's stage3_param_persistence_threshold under ZeRO 3: parameters this small or "
          "smaller stay gathered (default 1e5; transformers fills \"auto\" with 10·h)",
          "zeroPersistenceThreshold")
          .bounds(0, kMaxDeepSpeedBucket,
                  "The persistence threshold must be from 0 to " +
                      format_count(kMaxDeepSpeedBucket) + " elements.")
          .only_under({Stack::kDeepSpeed}, kBucketReason, kBucketRefusal)
          .later()
          .page("stack", "DeepSpeed's stage3_param_persistence_threshold (elements)"));
  // Megatron-LM's vocabulary padding (stacks/stack_run.hpp).
  constexpr const char* kPaddingRefusal =
      "The vocabulary's padding and the NullTokenizer are Megatron-LM's; choose the megatron "
      "stack, or leave them at their defaults (128, off).";
  add(row<&TrainingSetup::make_vocab_size_divisible_by>(
          id::kVocabDivisibleBy, "Vocabulary padded to a multiple of",
          "Megatron-LM's --make-vocab-size-divisible-by: the vocabulary is padded to a multiple "
          "of it × t",
          "makeVocabSizeDivisibleBy")
          .bounds(1, kMaxParallelDegree)
          .only_under({Stack::kMegatron}, "the vocabulary's padding is Megatron-LM's",
                      kPaddingRefusal)
          .page("stack", "Megatron-LM pads the vocabulary to a multiple of",
                "--make-vocab-size-divisible-by, times the tensor parallelism: 128 by default."));
  add(row<&TrainingSetup::eod_token>(
          id::kEodToken, "NullTokenizer's end-of-document token",
          "Megatron-LM's --tokenizer-type NullTokenizer before Megatron-Core 0.18: its "
          "end-of-document token joins the vocabulary before padding",
          "eodToken")
          .only_under({Stack::kMegatron}, "the NullTokenizer is Megatron-LM's", kPaddingRefusal)
          .page("stack", "NullTokenizer's EOD token",
                "Megatron-Core before 0.18 adds its end-of-document (EOD) token to the "
                "vocabulary before padding it."));
  add(row<&TrainingSetup::cp_comm_type>(
          id::kCpCommType, "Context-parallel exchange",
          "Megatron-LM's --cp-comm-type: how context parallelism exchanges attention's tensors",
          "cpCommType")
          .among(choices<CpCommType>())
          .only_under({Stack::kMegatron}, "--cp-comm-type is Megatron-LM's",
                      "--cp-comm-type is Megatron-LM's; choose the megatron stack, or p2p.")
          .page("stack", "Megatron-LM's context-parallel exchange",
                "--cp-comm-type: the all-to-all keeps the attention's output a second time (TE "
                "2.8 on)."));
  add(row<&TrainingSetup::cp_a2a_size>(
          id::kCpA2aSize, "All-to-all group (a2a+p2p)",
          "Under --cp-comm-type a2a+p2p, the devices of each all-to-all group: the first of "
          "Megatron-LM's --hierarchical-context-parallel-sizes, the ring over c / it",
          "cpA2aSize")
          .bounds(1, kMaxParallelDegree)
          .requires_value(id::kCpCommType, "a2a+p2p", "the group is a2a+p2p's")
          .rule(
              [](const TrainingSetup& setup) { return setup.cp_comm_type == CpCommType::kA2aP2p; },
              "The all-to-all group is --cp-comm-type a2a+p2p's: choose that exchange, or a "
              "group of 1.")
          .page("stack", "All-to-all group (a2a+p2p)",
                "--hierarchical-context-parallel-sizes' first: each all-to-all group's "
                "devices."));
  add(row<&TrainingSetup::moe_dispatcher>(
          id::kMoeDispatcher, "Token dispatcher",
          "Megatron-LM's --moe-token-dispatcher-type: how a mixture of experts sends its tokens "
          "to the experts' devices",
          "moeDispatcher")
          .among(choices<MoeDispatcher>())
          .only_under({Stack::kMegatron}, "--moe-token-dispatcher-type is Megatron-LM's",
                      "--moe-token-dispatcher-type is Megatron-LM's; choose the megatron stack, "
                      "or alltoall.")
          .page("stack", "Megatron-LM's token dispatcher",
                "--moe-token-dispatcher-type: the all-gather (Megatron-LM's default) gathers the "
                "group's tokens into one buffer and reduce-scatters the combine in FP32; flex "
                "sends each token once to each device holding one of its experts, through "
                "DeepEP's buffer."));
  constexpr const char* kDeferRefusal =
      "--defer-embedding-wgrad-compute is Megatron-LM's; choose the megatron stack, or turn it "
      "off.";
  add(row<&TrainingSetup::defer_embedding_wgrad>(
          id::kDeferEmbeddingWgrad, "Deferred output-layer weight gradient",
          "Megatron-LM's --defer-embedding-wgrad-compute: the last pipeline stage keeps each "
          "micro-batch's output-layer input and gradient until the step's end",
          "deferEmbeddingWgrad")
          .only_under({Stack::kMegatron}, "--defer-embedding-wgrad-compute is Megatron-LM's",
                      kDeferRefusal)
          .rule([](const TrainingSetup& setup) { return setup.layout.pipeline_parallel > 1; },
                "--defer-embedding-wgrad-compute needs pipeline parallelism above 1, as "
                "Megatron-LM requires.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.wgrad_deferral_limit > 0 || setup.global_batch_sequences > 0;
              },
              "Without a deferral limit the last stage keeps every micro-batch of the step: set "
              "the global batch, or a deferral limit.")
          .page("stack", "Deferred embedding wgrad",
                "Megatron-LM's --defer-embedding-wgrad-compute: the last stage keeps each "
                "micro-batch's output-layer input and gradient until the step's end."));
  add(row<&TrainingSetup::wgrad_deferral_limit>(
          id::kWgradDeferralLimit, "Weight-gradient deferral limit",
          "Megatron-LM's --wgrad-deferral-limit: the micro-batches whose output-layer weight "
          "gradient is deferred (0: all of them)",
          "wgradDeferralLimit")
          .bounds(0, kMaxGlobalBatchSequences,
                  "The deferral limit must be a whole number of micro-batches from 0 (all) to " +
                      format_count(kMaxGlobalBatchSequences) + ".")
          .requires_value(id::kDeferEmbeddingWgrad, "on",
                          "the limit bounds the deferred weight gradient")
          .rule([](const TrainingSetup& setup) { return setup.defer_embedding_wgrad; },
                "The deferral limit bounds --defer-embedding-wgrad-compute's buffers; turn that "
                "on, or set the limit to 0.")
          .page("stack", "Micro-batches deferred (0: all)"));
  add(row<&TrainingSetup::grad_reduce_in_bf16>(
          id::kGradReduceInBf16, "BF16 main gradients",
          "Megatron-LM's --grad-reduce-in-bf16: the gradients accumulated and reduced in BF16, "
          "2 B a parameter rather than FP32's 4",
          "gradReduceInBf16")
          .only_under({Stack::kMegatron}, "--grad-reduce-in-bf16 is Megatron-LM's",
                      "--grad-reduce-in-bf16 is Megatron-LM's; choose the megatron stack, or turn "
                      "it off.")
          .page("stack", "BF16 main gradients",
                "Megatron-LM's --grad-reduce-in-bf16: a BF16 gradient buffer, copied to FP32 "
                "shard by shard at the optimiser's step."));
  add(row<&TrainingSetup::log_num_zeros_in_grad>(
          id::kLogNumZerosInGrad, "Count the gradients' zeros",
          "Megatron-LM's --log-num-zeros-in-grad: at each optimiser step a bool copy of one main "
          "gradient at a time, its zeros counted",
          "logNumZerosInGrad")
          .only_under({Stack::kMegatron}, "--log-num-zeros-in-grad is Megatron-LM's",
                      "--log-num-zeros-in-grad is Megatron-LM's; choose the megatron stack, or "
                      "turn it off.")
          .page("stack", "Count the gradients' zeros",
                "Megatron-LM's --log-num-zeros-in-grad: at the optimiser's step a bool copy of "
                "one main gradient at a time, the largest's elements in bytes."));
  add(row<&TrainingSetup::overlap_grad_reduce>(
          id::kOverlapGradReduce, "Overlapped gradient reduction",
          "Megatron-LM's --overlap-grad-reduce: the gradient buffers reduced in buckets of "
          "max(4e7, 1e6·d·c) elements on the first pipeline stage as the backward pass fills "
          "them, one bucket a buffer without it (the buffers are whole either way; a large "
          "weight's gradient shards finer)",
          "overlapGradReduce")
          .only_under({Stack::kMegatron}, "--overlap-grad-reduce is Megatron-LM's",
                      "--overlap-grad-reduce is Megatron-LM's; choose the megatron stack, or turn "
                      "it off.")
          .page("stack", "Overlapped gradient reduction",
                "Megatron-LM's --overlap-grad-reduce: the gradients reduced in buckets as the "
                "backward pass fills them; the buffers are whole either way."));
  add(row<&TrainingSetup::empty_cache_level>(
          id::kEmptyCacheLevel, "Empty the cache",
          "Megatron-LM's --empty-unused-memory-level: torch.cuda.empty_cache() after each step's "
          "forward and backward passes (1), and after its optimiser step too (2)",
          "emptyCacheLevel")
          .bounds(0, 2,
                  "The level must be 0, 1 or 2, as Megatron-LM's --empty-unused-memory-level.")
          .only_under({Stack::kMegatron}, "--empty-unused-memory-level is Megatron-LM's",
                      "--empty-unused-memory-level is Megatron-LM's; choose the megatron stack, or "
                      "0.")
          .rule([](const TrainingSetup& setup) { return !setup.expandable_segments; },
                "Emptying the cache under expandable segments unmaps free pages inside segments, "
                "which the replay does not follow: turn one of them off.")
          .page("stack", "Empty the cache each step (0, 1, 2)",
                "Megatron-LM's --empty-unused-memory-level: what the allocator keeps reserved "
                "between steps is given back."));
  add(row<&TrainingSetup::no_dataloader_attention_mask>(
          id::kNoDataloaderAttentionMask, "No attention mask from the data loader",
          "Megatron-LM's --no-create-attention-mask-in-dataloader: without it the data loader "
          "makes each micro-batch's causal mask, b·s² booleans on the first and last pipeline "
          "stages",
          "noCreateAttentionMaskInDataloader")
          .only_under({Stack::kMegatron},
                      "--no-create-attention-mask-in-dataloader is Megatron-LM's",
                      "--no-create-attention-mask-in-dataloader is Megatron-LM's; choose the "
                      "megatron stack, or turn it off.")
          .page("stack", "No attention mask from the data loader",
                "Megatron-LM's --no-create-attention-mask-in-dataloader: by default each "
                "micro-batch carries a causal mask of s × s booleans to the device, which "
                "FlashAttention never reads."));
  add(row<&TrainingSetup::meta_device_init>(
          id::kMetaDeviceInit, "Build the model on the meta device",
          "Megatron-LM's --init-model-with-meta-device: Megatron-FSDP makes its sharded buffers "
          "without the whole model on the device first",
          "initModelWithMetaDevice")
          .only_under({Stack::kMegatron}, "--init-model-with-meta-device is Megatron-LM's",
                      "--init-model-with-meta-device is Megatron-LM's; choose the megatron stack, "
                      "or turn it off.")
          .page("stack", "Build the model on the meta device",
                "Megatron-LM's --init-model-with-meta-device: under Megatron-FSDP (ZeRO 2 and 3) "
                "the whole BF16 model is never on the device."));
  add(row<&TrainingSetup::fsdp_double_buffer>(
          id::kFsdpDoubleBuffer, "Megatron-FSDP double buffer",
          "Megatron-LM's --fsdp-double-buffer (and --use-nccl-ub, which turns it on): two slots "
          "for the gathered layers and two for their gradients, kept for the run",
          "fsdpDoubleBuffer")
          .only_under({Stack::kMegatron}, "--fsdp-double-buffer is Megatron-LM's",
                      "--fsdp-double-buffer is Megatron-LM's; choose the megatron stack, or turn "
                      "it off.")
          .rule([](const TrainingSetup& setup) { return megatron_fsdp(setup); },
                "--fsdp-double-buffer is Megatron-FSDP's: set ZeRO 2 or 3 (--use-megatron-fsdp), "
                "or turn it off.")
          .page("stack", "Megatron-FSDP's double buffer",
                "Megatron-LM's --fsdp-double-buffer: two layers gathered at most, their slots and "
                "two gradient slots kept for the run."));
  add(row<&TrainingSetup::no_gradient_accumulation_fusion>(
          id::kNoGradientAccumulationFusion, "No gradient-accumulation fusion",
          "Megatron-LM's --no-gradient-accumulation-fusion: each weight's gradient a tensor of "
          "its own, added to the main gradient and freed, and no cached weight gradients",
          "noGradientAccumulationFusion")
          .only_under({Stack::kMegatron}, "--no-gradient-accumulation-fusion is Megatron-LM's",
                      "--no-gradient-accumulation-fusion is Megatron-LM's; choose the megatron "
                      "stack, or turn it off.")
          .page("stack", "No gradient-accumulation fusion",
                "Megatron-LM's --no-gradient-accumulation-fusion: each weight's gradient is made "
                "whole in BF16, then added to the main gradient."));
  add(row<&TrainingSetup::optimizer_instances>(
          id::kOptimizerInstances, "Distributed optimiser instances",
          "Megatron-LM's --num-distributed-optimizer-instances: copies of the distributed "
          "optimiser, each sharding its state over d·c / k ranks",
          "optimizerInstances")
          .bounds(1, kMaxParallelDegree)
          .only_under({Stack::kMegatron}, "--num-distributed-optimizer-instances is Megatron-LM's",
                      "--num-distributed-optimizer-instances is Megatron-LM's; choose the "
                      "megatron stack, or 1.")
          .rule([](const TrainingSetup& setup) { return setup.layout.zero_stage >= 1; },
                "Distributed optimiser instances are the distributed optimiser's copies: set ZeRO "
                "1 (--use-distributed-optimizer), or 1 instance.")
          .rule(
              [](const TrainingSetup& setup) {
                const ParallelLayout& layout = setup.layout;
                const long long k = setup.optimizer_instances;
                const long long ranks =
                    static_cast<long long>(layout.data_parallel) * layout.context_parallel;
                const long long experts = ranks * layout.tensor_parallel /
                                          (static_cast<long long>(layout.expert_parallel) *
                                           expert_tensor_parallel_of(layout));
                return ranks % k == 0 && (experts < 1 || experts % k == 0);
              },
              "Distributed optimiser instances must divide the d·c data-parallel ranks (and the "
              "experts' data-parallel group), as Megatron-LM requires.")
          .page("stack", "Megatron-LM's distributed optimiser instances",
                "--num-distributed-optimizer-instances: each copy shards the optimiser's state "
                "over d·c / k ranks."));
  add(row<&TrainingSetup::compile>(id::kCompile, "torch.compile",
                                   "torch.compile as torchtitan and torchtune run it: the "
                                   "transformer blocks, the loss too, or (torchtitan) the loss "
                                   "alone",
                                   "compile")
          .among(choices<Compile>())
          .only_under({Stack::kTorchtitan, Stack::kTorchtune},
                      "torch.compile is modelled as torchtitan and torchtune run it",
                      "torch.compile is modelled as torchtitan and torchtune run it; choose one of "
                      "those stacks, or off.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.compile != Compile::kLoss || setup.stack == Stack::kTorchtitan;
              },
              "Compiling the loss alone is torchtitan's (compile.components = [\"loss\"]); "
              "torchtune compiles the model and the loss together. Choose blocks-and-loss.")
          .rule(
              [](const TrainingSetup& setup) {
                return !blocks_compiled(setup.compile) || setup.recompute == Recompute::kFull ||
                       setup.recompute == Recompute::kSelectiveOp;
              },
              "Under torch.compile trainmem models full recomputation, where a compiled block "
              "saves its input alone, as eager, and torchtitan's per-op selective recomputation, "
              "whose tags Inductor's min-cut partitioner follows; what it saves without them "
              "(none, or Korthikanti's selective) is not modelled. Choose full or selective-op "
              "recomputation, or compile off.")
          .rule(
              [](const TrainingSetup& setup) {
                return !(loss_compiled(setup.compile) && setup.logits &&
                         setup.layout.tensor_parallel > 1);
              },
              "The compiled loss under tensor parallelism (DTensor's loss_parallel) is not "
              "modelled; choose the blocks alone, or tp 1.")
          .page("stack", "",
                "torchtitan's and torchtune's: the blocks (torchtitan at the end of 2024), or the "
                "loss too, with no FP32 copy of the logits, or (torchtitan's DeepSeek-V3 and Kimi "
                "configs) the loss alone. Compiled blocks under full or per-op selective "
                "recomputation."));
  add(row<&TrainingSetup::fused_qkv>(
          id::kFusedQkv, "Fused QKV",
          "torchtitan's fuse_qkv (its default since June 2026): one wqkv matmul, whose whole "
          "output the per-op policy saves",
          "fusedQkv")
          .only_under({Stack::kTorchtitan}, "fuse_qkv is torchtitan's",
                      "fuse_qkv is torchtitan's model option; choose the torchtitan stack, or "
                      "turn it off.")
          .later()
          .page("stack", "",
                "torchtitan's Llama 3 and Qwen3 since June 2026: the queries, keys and values "
                "from one matmul, so the per-op policy keeps all three (five matmuls a block)."));
}

// torchtune's and transformers' switches, and PyTorch's caching allocator's settings.
void add_single_device_switches(Entries& entries) {
  const auto add = [&entries](Entry entry) { entries.push_back(entry.later()); };
  add(row<&TrainingSetup::fsdp_version>(id::kFsdpVersion, "FSDP version",
                                        "accelerate's FSDP under the hf stack's ZeRO 3: FSDP1 "
                                        "(flat parameters) or FSDP2 (fully_shard)",
                                        "fsdpVersion")
          .among(choices<FsdpVersion>())
          .only_under({Stack::kHf}, "the FSDP version is accelerate's, under the hf stack",
                      "The FSDP version is accelerate's, under the hf stack; choose it, or fsdp1.")
          .rule([](const TrainingSetup& setup) { return setup.layout.zero_stage >= 3; },
                "FSDP2 is accelerate's FSDP under ZeRO 3 (FULL_SHARD); choose ZeRO 3, or fsdp1.")
          .page("stack", "accelerate's FSDP version",
                "The hf stack under ZeRO 3: FSDP1 keeps the embedding and output layer gathered "
                "for the whole step; FSDP2 (what accelerate config writes by default) only for "
                "their own passes."));
  // torchtune runs the step in the backward pass in its single-device recipes, full training
  // (full_finetune_single_device.py: optimizer_in_bwd).
  add(row<&TrainingSetup::optimizer_in_backward>(
          id::kOptimizerInBackward, "Optimizer in backward",
          "torchtune's optimizer_in_bwd: each parameter stepped as its gradient is made, which is "
          "then freed",
          "optimizerInBackward")
          .rule(
              [](const TrainingSetup& setup) {
                return num_devices(setup.layout) == 1 && setup.lora_rank == 0 &&
                       (setup.stack == Stack::kIdeal || stack_row(setup.stack).steps_in_backward) &&
                       setup.offload == Offload::kNone;
              },
              "The optimizer's step in the backward pass is modelled as torchtune's single-device "
              "full training runs it: one device, no LoRA, no offloading, under the ideal or "
              "torchtune stack; turn it off, or set those.")
          .page("recipe", "",
                "torchtune's: each gradient is stepped and freed as it is made, on one device."));
  add(row<&TrainingSetup::paged_optimizer>(
          id::kPagedOptimizer, "Paged optimizer",
          "bitsandbytes' paged AdamW (transformers' paged_adamw_32bit and paged_adamw_8bit): the "
          "state of each parameter of 10^5 elements or more outside PyTorch's allocator, paged to "
          "the host when the device runs short",
          "pagedOptimizer")
          .only_under({Stack::kHf},
                      "paged optimisers are modelled as transformers' Trainer runs them",
                      "Paged optimisers are modelled as transformers' Trainer runs them "
                      "(paged_adamw_32bit, paged_adamw_8bit); choose the hf stack, or turn it off.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.optimizer == Optimizer::kAdam ||
                       setup.optimizer == Optimizer::kAdam8bit;
              },
              "bitsandbytes pages AdamW's state (32-bit or 8-bit); choose adam or adam-8bit, or "
              "turn paging off.")
          .page("stack", "",
                "The hf stack's bitsandbytes paged AdamW: the larger parameters' state outside "
                "PyTorch's allocator, paged to the host when the device runs short."));
  add(row<&TrainingSetup::kbit_prep>(
          id::kKbitPrep, "prepare_model_for_kbit_training",
          "PEFT's prepare_model_for_kbit_training: the embedding, norms and output layer upcast "
          "to FP32, so the residual stream runs in FP32, with gradient checkpointing",
          "kbitPrep")
          .only_under(
              {Stack::kHf},
              "prepare_model_for_kbit_training is modelled as transformers' Trainer runs it",
              "prepare_model_for_kbit_training is modelled as transformers' Trainer runs "
              "it; choose the hf stack, or turn it off.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.lora_rank > 0 && setup.base_weights != BaseWeights::kBf16;
              },
              "prepare_model_for_kbit_training prepares a quantised base for LoRA; set a LoRA "
              "rank and nf4 or int8 base weights, or turn it off.")
          .rule([](const TrainingSetup& setup) { return setup.recompute == Recompute::kFull; },
                "prepare_model_for_kbit_training turns gradient checkpointing on "
                "(use_gradient_checkpointing=True), which is modelled; choose full "
                "recomputation, or turn it off.")
          .page("stack", "",
                "The hf stack's QLoRA preparation: the embedding, norms and output layer in FP32, "
                "so the residual stream runs in FP32, under gradient checkpointing."));
  add(row<&TrainingSetup::kbit_cast_back>(
          id::kKbitCastBack, "TRL 0.13-0.21's cast back",
          "TRL 0.13 to 0.21's SFTTrainer after prepare_model_for_kbit_training: "
          "peft_module_casting_to_bf16 casts the embedding and output layer back to BF16 and "
          "keeps the norms, and so the residual stream, in FP32",
          "kbitCastBack")
          .later()
          .only_under({Stack::kHf}, "TRL's cast back is modelled as transformers' Trainer runs it",
                      "TRL's cast back is modelled as transformers' Trainer runs it; choose the "
                      "hf stack, or turn it off.")
          .rule([](const TrainingSetup& setup) { return setup.kbit_prep; },
                "TRL 0.13 to 0.21 casts back what prepare_model_for_kbit_training upcast; turn "
                "prepare_model_for_kbit_training on, or turn this off.")
          .page("stack", "",
                "TRL 0.13 to 0.21 (SFTTrainer, QLoRA on one device, bf16): the embedding and "
                "output layer back in BF16, the norms and the residual stream still FP32. TRL "
                "0.22 on prepares nothing."));
  // torch.utils.checkpoint's reentrant variant, as transformers 4.x's Trainer runs it.
  add(row<&TrainingSetup::reentrant_checkpointing>(
          id::kReentrantCheckpointing, "Reentrant checkpointing",
          "gradient_checkpointing_kwargs={'use_reentrant': True}: transformers 4.x's default "
          "(transformers 5 and TRL default to False since January 2026); under accelerate's FSDP1 "
          "with LoRA each rebuilt layer's input and its gradient are held to the backward "
          "pass's end",
          "reentrantCheckpointing")
          .only_under({Stack::kHf},
                      "reentrant checkpointing is modelled as transformers' Trainer runs it",
                      "Reentrant checkpointing is modelled as transformers' Trainer runs it; "
                      "choose the hf stack, or turn it off.")
          .rule([](const TrainingSetup& setup) { return setup.recompute == Recompute::kFull; },
                "Reentrant checkpointing is gradient checkpointing's variant; choose full "
                "recomputation, or turn it off.")
          .page("stack", "",
                "use_reentrant=True, transformers 4.x's default: under accelerate's FSDP1 with "
                "LoRA each rebuilt layer's input and its gradient stay to the backward pass's "
                "end (FSDP's reshard-only hook holds them)."));
  // transformers' Trainer without bf16 over a model loaded in BF16: no autocast.
  add(row<&TrainingSetup::no_autocast>(
          id::kNoAutocast, "No autocast",
          "TrainingArguments bf16=False over a model loaded in BF16 (torch_dtype=torch.bfloat16): "
          "no autocast, so PEFT's FP32 adapters cast each input to FP32 (Linear.forward: x = "
          "x.to(lora_A.weight.dtype)) and save it, and their r-wide intermediates, in FP32",
          "noAutocast")
          .later()
          .only_under({Stack::kHf},
                      "running without autocast is modelled as transformers' "
                      "Trainer runs it",
                      "Running without autocast is modelled as transformers' Trainer runs it; "
                      "choose the hf stack, or turn it off.")
          .rule([](const TrainingSetup& setup) { return setup.precision == Precision::kBf16; },
                "Without autocast the model is loaded in BF16 (bf16-mixed is autocast's); choose "
                "bf16 precision, or turn this off.")
          .rule([](const TrainingSetup& setup) { return setup.base_weights == BaseWeights::kBf16; },
                "Running without autocast is modelled on a BF16 base; choose the BF16 base, or "
                "turn this off.")
          .page("stack", "",
                "bf16=False over a model loaded in BF16: PEFT's FP32 adapters save FP32 copies of "
                "their inputs where bf16 autocast saves BF16 ones."));
  // torchtune's distributed recipes (training/_distributed.py, shard_model): every layer an FSDP2
  // unit, and the embedding and output layer two more where the config names them.
  add(row<&TrainingSetup::custom_sharded_layers>(
          id::kCustomShardedLayers, "custom_sharded_layers",
          "torchtune's custom_sharded_layers: ['tok_embeddings', 'output'], as its Llama 3, 3.1 "
          "and 3.3 full configs set it: the embedding and output layer each an FSDP2 unit of its "
          "own, gathered for their own passes, not for the whole step",
          "customShardedLayers")
          .only_under({Stack::kTorchtune},
                      "custom_sharded_layers is torchtune's, under its distributed recipes",
                      "custom_sharded_layers is torchtune's; choose the torchtune stack, or turn "
                      "it off.")
          .rule([](const TrainingSetup& setup) { return num_devices(setup.layout) > 1; },
                "custom_sharded_layers shards over torchtune's distributed recipes (FSDP2); set "
                "d above 1, or turn it off.")
          .rule(
              [](const TrainingSetup& setup) {
                const ModelShape* shape = resolve_model(setup);
                return shape == nullptr || !shape->tied_embeddings;
              },
              "custom_sharded_layers is modelled for an output layer of its own: a tied one "
              "(TiedLinear) reads the embedding's weight outside the embedding's unit; turn it "
              "off.")
          .page("stack", "",
                "torchtune's distributed recipes: the embedding and output layer sharded as units "
                "of their own, gathered only for their own passes."));
  // PyTorch's caching allocator's settings (allocator.hpp), which any stack's replay follows.
  add(row<&TrainingSetup::expandable_segments>(
          id::kExpandableSegments, "Expandable segments",
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator maps each "
          "stream's memory as one segment that grows page by page",
          "expandableSegments")
          .rule(replays,
                "Expandable segments change PyTorch's caching allocator, which a training stack's "
                "replay follows and the idealised step has none of; choose a stack, or turn them "
                "off.")
          .page("stack", "",
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, under any stack: the allocator "
                "grows one segment a page at a time, which changes the reserved peak."));
  add(row<&TrainingSetup::max_split_size_mb>(
          id::kMaxSplitSize, "Largest block split (MiB)",
          "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb: blocks this large or larger are not split "
          "for smaller requests (0: no limit, PyTorch's default)",
          "maxSplitSizeMb")
          .bounds(0, kMaxAllocatorSplitMb,
                  "The largest block split must be 0 (no limit) or from 21 to " +
                      format_count(kMaxAllocatorSplitMb) + " MiB.")
          .rule(
              [](const TrainingSetup& setup) {
                return setup.max_split_size_mb >= kMinAllocatorSplitMb;
              },
              "PyTorch requires max_split_size_mb above 20 (its 20 MiB segments); set 21 or more, "
              "or 0 for no limit.")
          .rule(replays,
                "max_split_size_mb changes PyTorch's caching allocator, which a training stack's "
                "replay follows and the idealised step has none of; choose a stack, or set it to "
                "0.")
          .page("stack", "Largest block the allocator splits (MiB)",
                "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb, under any stack: blocks this large are "
                "kept whole for smaller requests. 0: no limit, PyTorch's default."));
}

}  // namespace trainmem::setting_rows
