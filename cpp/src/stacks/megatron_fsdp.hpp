// Megatron-FSDP's gathers and gradient buckets around each slot of Megatron-LM's replayed step
// (stack_frameworks.cpp, megatron_micro_batch): one class, used there alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "stacks/stack_step.hpp"
#include "trainmem/fp8.hpp"
#include "trainmem/options.hpp"

namespace trainmem::replay {

// Megatron-FSDP (--use-megatron-fsdp; ZeRO 2 and 3 under the megatron stack, its
// optim_grads and optim_grads_params sharding strategies; Megatron-LM d98e8a6,
// megatron/core/distributed/fsdp/src/megatron_fsdp/): each transformer layer a unit and one bucket.
// Under optim_grads_params each layer is gathered whole (BF16) for its passes with the next ones
// prefetched while fewer than W elements are (param_and_grad_buffer.py, AllGatherPipeline
// .all_gather_params: suggested_AG_prefetch_size; megatron_fsdp.py sets W = C // 2 with
// C = max(1e9, 2 × a unit's parameters) unless --suggested-communication-unit-size), and freed
// after its pass (_post_forward, _post_backward_release_module). The final norm's forward
// prefetches from the first layer on, a window held to the backward pass's first gather. In the
// backward pass each layer's gradient is made whole in a BF16 bucket (the main-gradient dtype, the
// parameters' unless --megatron-fsdp-main-grads-dtype; get_main_grad), reduce-scattered once
// complete, and freed only while the buckets reduce-scattering hold more than C elements
// (GradReducePipeline: the oldest first), all by the end of the micro-batch's backward pass
// (_root_post_backward).
// Under --fsdp-double-buffer (and --use-nccl-ub, which turns it on) the layers of the largest
// group of identical units (FixedPoolAllocator: fsdp_double_buffer_units, the first such group
// where two tie) are gathered into two slots of a layer each and make their gradients in two more
// (param_and_grad_buffer.py, FixedPoolAllocator over GlobalMemoryBuffer.get_tensor, which keeps
// each slot by name for the run); the other units (a mixture's dense layers) are allocated as
// without it (its backup_allocator, fsdp_db_use_persist_buf_on_alloc_fail unset). Beside a
// unit of the pool one more is prefetched, beside one outside it two (all_gather_params:
// need_skip_prefetch counts the running unit only if pooled), within the window; and beside the
// running unit's gradients at most one more unit's are reduce-scattering where it is pooled, two
// where not (_enforce_double_buffer_limit, at each unit's first gradient and as it is queued), the
// bucket outside the layers counted as a unit. The capacity C is not applied there as well: two
// queued units pass it only where a unit holds more than C / 2 elements. The root's gathers are
// allocated as before.
namespace fsdp_detail {

class MegatronFsdp {
 public:
  MegatronFsdp(Step& step, const StepDevice& device)
      : step_(step),
        on_(device.setup.layout.zero_stage >= 2),
        gathers_(device.setup.layout.zero_stage >= 3),
        double_buffer_(device.setup.fsdp_double_buffer),
        undistributed_experts_(device.expert_zero_shards <= 1),
        units_(device.layer_units),
        stage_layers_(static_cast<int>(device.layers_per_stage)),
        in_flight_slots_(static_cast<int>(
            std::lround(device.micro_batches_in_flight * device.layers_per_stage))) {
    if (!on_) return;
    // Each of the stage's layers its own unit (replay.cpp fills them under Megatron-FSDP); the
    // mean layer for each where none is given.
    if (units_.empty()) {
      units_.assign(static_cast<std::size_t>(device.layers_per_stage),
                    {device.layer_parameters, device.layer_expert_parameters});
    }
    layers_ = static_cast<int>(units_.size());
    if (double_buffer_) choose_pool();
    // A stage of no layers (a layout's empty stage) gathers none and makes no layer's bucket.
    if (layers_ == 0) gathers_ = false;
    // A group of one rank is not distributed (param_and_grad_buffer.py: is_data_distributed
    // needs group.size() > 1): where the experts' data-parallel group is one rank their gathered
    // weights and their gradient bucket are views of the persistent buffers, no temporary.
    // Under --fp8-param-gather a layer's linear weights are gathered as their FP8 data, and on
    // Hopper Transformer Engine makes each one's transpose after its backward gather
    // (tensor/utils.py, post_all_gather_processing), dropped as the layer is released
    // (megatron_fsdp.py; --keep-fp8-transpose-cache, which keeps them, is not read). A dense
    // decoder's alone: a mixture's are refused (check.cpp).
    fp8_ = device.setup.fp8_param_gather ? device.fp8_layer_weights : 0;
    if (fp8_ > 0 && fp8_weight_copies(device.setup) > 1) transpose_bytes_ = kFp8Bytes * fp8_;
    // megatron_fsdp.py: C = max(1e9, 2 × the mean unit's parameters, over this stage's units)
    // under optim_grads_params, max(1e9, the DDP bucket size or 1e9) otherwise (--ddp-bucket-size
    // is unset by default); the all-gathers' window is C / 2.
    double elements = 0;
    for (const LayerUnit& unit : units_) elements += unit.parameters;
    const double mean = layers_ > 0 ? elements / layers_ : 0;
    queue_elements_ = gathers_ ? std::max(1e9, 2 * mean) : 1e9;
    window_ = std::max(1e9, 2 * mean) / 2;
    if (double_buffer_) {
      const char* source =
          "Megatron-LM, megatron_fsdp/param_and_grad_buffer.py, FixedPoolAllocator: two slots "
          "of a layer each from GlobalMemoryBuffer.get_tensor, kept for the run "
          "(--fsdp-double-buffer)";
      gathered_ = step.term("megatron-fsdp-gathered-layers",
                            fp8_ > 0 ? "Gathered layers, double buffer (FP8)"
                                     : "Gathered layers, double buffer (BF16)",
                            source);
      gradients_ = step.term("megatron-fsdp-unsharded-gradients",
                             "Unsharded gradients, double buffer (BF16)", source);
      return;
    }
    gathered_ =
        step.term("megatron-fsdp-gathered-layers",
                  fp8_ > 0 ? "Gathered layers, prefetch (FP8)" : "Gathered layers, prefetch (BF16)",
                  "Megatron-LM, megatron/core/distributed/fsdp/src/megatron_fsdp/"
                  "param_and_grad_buffer.py, AllGatherPipeline.all_gather_params: the "
                  "layer and the next while fewer than max(1e9, 2 × a layer's "
                  "parameters) / 2 elements are prefetched");
    gradients_ = step.term("megatron-fsdp-unsharded-gradients", "Unsharded gradient buckets (BF16)",
                           "Megatron-LM, megatron_fsdp/param_and_grad_buffer.py, "
                           "GradReducePipeline: each layer's whole gradient until its "
                           "reduce-scatter and C elements after it are queued (10^9; "
                           "max(10^9, 2 × a layer's parameters) under optim_grads_params), all "
                           "by the end of the backward pass");
  }

  bool on() const { return on_; }

  // The forward pass's and the backward pass's gathers and gradient buckets, around each slot.
  // Under a pipeline the stage's slots are its micro-batches in flight, one after another, each
  // its layers: each micro-batch's passes gather its layers again, and reduce-scatter their
  // gradients (optim_grads and optim_grads_params reduce every backward pass:
  // _process_post_backward_gradients).
  SlotHooks forward() {
    if (!gathers_) return {};
    return {[this](int slot) { gather(layer_of(slot), +1); },
            [this](int slot) { release(layer_of(slot)); }};
  }
  SlotHooks backward() {
    return {[this](int slot) {
              const int layer = layer_of(slot);
              give_all(step_, wrapped_);  // recycled by the first gather of the backward pass
              if (layers_ == 0) return;
              if (gathers_) gather(layer, -1);
              if (transpose_bytes_ > 0) transpose_ = step_.take(gathered_, transpose_bytes_);
              const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
              if (double_buffer_) {
                trim_double_buffered(layer);
                pooled_making_.first = layer;
                if (in_pool(layer)) {
                  take_slots(gradient_slots_, gradients_, bucket_bytes(pool_unit_, false));
                } else {
                  pooled_making_.second.push_back(step_.take(gradients_, gradient_bytes(layer)));
                }
                return;
              }
              // A mixture's layer is two buckets, its routed experts' and the rest
              // (param_and_grad_buffer.py groups a unit's parameters by is_expert_param:
              // ".experts." in the name), each reduce-scattered over its own data-parallel group.
              if (unit.expert_parameters > 0) {
                making_.push_back({step_.take(gradients_, kBf16Bytes * (unit.expert_parameters -
                                                                        held_experts(unit))),
                                   unit.expert_parameters});
              }
              making_.push_back(
                  {step_.take(gradients_, kBf16Bytes * (unit.parameters - unit.expert_parameters)),
                   unit.parameters - unit.expert_parameters});
            },
            [this](int slot) {
              if (gathers_) release(layer_of(slot));
              if (transpose_) step_.give(*transpose_);
              transpose_.reset();
              if (double_buffer_) {
                if (layers_ > 0) queue_double_buffered();
                return;
              }
              // Its reduce-scatters queued, the experts' bucket first (complete once the MLP's
              // backward is), then the rest's; before each the oldest freed while more than C
              // elements wait (wait_for_previous_grad_reduce). Each bucket is padded to a multiple
              // of D × its rows' least common multiple, where C counts a layer unpadded: whole
              // layers reaching C are more than it.
              for (const auto& bucket : making_) {
                buckets_.push_back(bucket);
                double queued = 0;
                for (const auto& each : buckets_) queued += each.second;
                while (buckets_.size() > 1 && queued - buckets_.back().second >= queue_elements_) {
                  queued -= buckets_.front().second;
                  step_.give(buckets_.front().first);
                  buckets_.pop_front();
                }
              }
              making_.clear();
            }};
  }
  // The final norm's forward, on the stage that holds it, in the run's first micro-batch: its
  // prefetch gathers the first layers again, to the backward pass. After the first backward pass
  // the modules outside the layers stay PRE_BACKWARD (_root_pre_backward sets every submodule;
  // only the units return to IDLE, _post_backward_release_module), and a pre-forward hook in that
  // state prefetches nothing (_pre_forward_param_unshard).
  void regather_at_the_loss() {
    if (!gathers_ || double_buffer_) return;  // the slots hold the first layer again
    prefetch_from(0, wrapped_);
  }
  // The modules outside the layers share one bucket: its whole gradient is made at its first
  // parameter's gradient (get_main_grad) and complete only once the last's is, its
  // reduce-scatter waiting for all. Where the stage holds the output layer, as its backward
  // pass starts: with the embedding beside it (no pipeline) complete at the pass's end; on a last
  // stage without it complete at once with the final norm's gradient, and queued with the
  // layers' (`completes_at_once`; in the double buffer's queue as a unit of its own). On a first
  // stage without the output layer, at the embedding's weight gradient.
  void take_root_gradients(double root_parameters, bool completes_at_once) {
    if (!on_ || root_parameters <= 0) return;
    // main_grad_getter enforces the double buffer's limit as the bucket is first made, the bucket
    // outside the layers not counted as the running unit.
    if (double_buffer_) trim_double_buffered(kRootUnit);
    const auto bucket = step_.take(gradients_, kBf16Bytes * root_parameters);
    if (completes_at_once && double_buffer_) {
      pooled_queue_.push_back({kRootUnit, Handles{bucket}});
    } else if (completes_at_once) {
      buckets_.push_back({bucket, root_parameters});
    } else {
      root_bucket_.push_back(bucket);
    }
  }
  // _root_post_backward, at the end of each micro-batch's backward pass (an earlier one in flight
  // under a pipeline, or the step's last): every reduce-scatter waited on and its bucket freed.
  void end_of_backward() {
    for (const auto& bucket : buckets_) step_.give(bucket.first);
    buckets_.clear();
    for (auto& queued : pooled_queue_) give_all(step_, queued.second);
    pooled_queue_.clear();
    give_all(step_, root_bucket_);
  }
  // After the optimiser's step, start_param_sync gathers the bucket of the stage's first
  // parameter (megatron_fsdp.py: parameters()[0]) and prefetches from there: the embedding's on a
  // stage that holds it, then the first layers; else the first layer's, then the next.
  Handles prefetch_next_step(bool from_the_embedding) {
    Handles next;
    if (!gathers_ || double_buffer_) return next;
    if (!from_the_embedding && layers_ > 0) {
      next.push_back(step_.take(gathered_, unit_bytes(0)));
      prefetch_from(1, next);
    } else {
      prefetch_from(0, next);
    }
    return next;
  }

 private:
  // The unit of slot `slot` (from 1): the stage's micro-batches in flight are its layers each,
  // then the multi-token-prediction modules' slots their units, after the layers'.
  int layer_of(int slot) const {
    if (stage_layers_ <= 0) return 0;
    if (slot > in_flight_slots_)
      return std::min(layers_ - 1, stage_layers_ + slot - in_flight_slots_ - 1);
    return (slot - 1) % stage_layers_;
  }
  // Of a unit's routed experts, those in their persistent buffers (an undistributed group's).
  double held_experts(const LayerUnit& unit) const {
    return undistributed_experts_ ? unit.expert_parameters : 0;
  }
  // A layer gathered: BF16, its FP8 parameters' data in FP8.
  double unit_bytes(int layer) const {
    const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
    return kBf16Bytes * (unit.parameters - fp8_ - held_experts(unit)) + kFp8Bytes * fp8_;
  }
  // From layer `first` on, while fewer than the window's elements are prefetched.
  void prefetch_from(int first, Handles& held) {
    double prefetched = 0;
    for (int layer = first; layer < layers_ && prefetched < window_; ++layer) {
      held.push_back(step_.take(gathered_, unit_bytes(layer)));
      prefetched += units_[static_cast<std::size_t>(layer)].parameters;
    }
  }
  // The double buffer's pool: the units of the largest group alike (the first where two tie).
  void choose_pool() {
    int best = 0;
    int best_count = 0;
    for (int unit = 0; unit < layers_; ++unit) {
      int count = 0;
      for (int other = 0; other < layers_; ++other) count += same_unit(unit, other) ? 1 : 0;
      if (count > best_count) {
        best = unit;
        best_count = count;
      }
    }
    pool_unit_ = best;
  }
  bool same_unit(int a, int b) const {
    const LayerUnit& x = units_[static_cast<std::size_t>(a)];
    const LayerUnit& y = units_[static_cast<std::size_t>(b)];
    return std::abs(x.parameters - y.parameters) < 0.5 &&
           std::abs(x.expert_parameters - y.expert_parameters) < 0.5;
  }
  bool in_pool(int layer) const { return same_unit(layer, pool_unit_); }
  // A unit's gradient buckets, whole: its routed experts' (unless undistributed) and the rest's.
  double gradient_bytes(int layer) const {
    const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
    return kBf16Bytes * (unit.parameters - held_experts(unit));
  }
  // _enforce_double_buffer_limit, as the running unit's gradient is first allocated
  // (main_grad_getter) and again as its buckets are queued: the queued units, newest first, kept
  // while with the running one (if in the pool) they are two units at most, the bucket outside the
  // layers counting as one (its unit id None); the older ones waited on, their buckets (outside
  // the pool) freed.
  void trim_double_buffered(int running) {
    std::set<int> units;
    if (running >= 0 && in_pool(running)) units.insert(running);
    std::size_t keep = pooled_queue_.size();
    for (auto queued = pooled_queue_.rbegin(); queued != pooled_queue_.rend(); ++queued) {
      units.insert(queued->first);
      if (units.size() > 2) --keep;
    }
    while (pooled_queue_.size() > keep) {
      give_all(step_, pooled_queue_.front().second);
      pooled_queue_.pop_front();
    }
  }
  void queue_double_buffered() {
    trim_double_buffered(pooled_making_.first);
    pooled_queue_.push_back(std::move(pooled_making_));
    pooled_making_ = {};
  }
  // The double buffer's two slots of a layer each, made at their first use and kept.
  // Each slot one buffer a bucket of the unit (FixedPoolAllocator: a buffer for each bucket
  // offset): a mixture layer's routed experts' and the rest's.
  void take_slots(Handles& slots, std::size_t term, const std::vector<double>& buckets) {
    if (!slots.empty()) return;
    for (int slot = 0; slot < 2; ++slot) {
      for (const double bytes : buckets) slots.push_back(step_.take(term, bytes));
    }
  }
  // A unit's buckets, gathered (`weights`: its FP8 parameters' data in FP8) or its gradients':
  // a mixture layer's routed experts' (unless undistributed: the persistent buffers' views) and
  // the rest's.
  std::vector<double> bucket_bytes(int layer, bool weights) const {
    const LayerUnit& unit = units_[static_cast<std::size_t>(layer)];
    const double experts = unit.expert_parameters - held_experts(unit);
    std::vector<double> buckets;
    if (experts > 0) buckets.push_back(kBf16Bytes * experts);
    buckets.push_back(weights ? unit_bytes(layer) - kBf16Bytes * experts
                              : kBf16Bytes * (unit.parameters - unit.expert_parameters));
    return buckets;
  }
  // Layer `layer` (from 0) gathered, then the next in the pass's direction while fewer than the
  // window's elements are prefetched (all_gather_params: the buckets beyond the base).
  void gather(int layer, int direction) {
    if (double_buffer_) {
      // The unit, then the next while fewer than the window's elements are prefetched and the
      // units counted stay two (need_skip_prefetch: the running unit counted only if in the pool,
      // so beside a unit outside it two more): the pool's in its slots, the others allocated for
      // their pass.
      std::set<int> counted;
      if (in_pool(layer)) counted.insert(layer);
      double prefetched = 0;
      for (int next = layer; next >= 0 && next < layers_; next += direction) {
        if (next != layer) {
          if (prefetched >= window_) break;
          counted.insert(next);
          if (counted.size() > 2) break;
          prefetched += units_[static_cast<std::size_t>(next)].parameters;
        }
        if (in_pool(next)) {
          take_slots(gathered_slots_, gathered_, bucket_bytes(pool_unit_, true));
        } else if (resident_.count(next) == 0) {
          resident_[next] = step_.take(gathered_, unit_bytes(next));
        }
      }
      return;
    }
    double prefetched = 0;
    for (int next = layer; next >= 0 && next < layers_; next += direction) {
      if (next != layer && prefetched >= window_) break;
      if (resident_.count(next) == 0) resident_[next] = step_.take(gathered_, unit_bytes(next));
      if (next != layer) prefetched += units_[static_cast<std::size_t>(next)].parameters;
    }
  }
  void release(int layer) {
    const auto found = resident_.find(layer);
    if (found == resident_.end()) return;
    step_.give(found->second);
    resident_.erase(found);
  }

  Step& step_;
  bool on_;
  bool gathers_;
  bool double_buffer_;
  bool undistributed_experts_;  // the experts' data-parallel group is one rank
  std::vector<LayerUnit> units_;
  int stage_layers_ = 0;     // the stage's decoder layers (units_ has the modules' after)
  int in_flight_slots_ = 0;  // its micro-batches in flight times them
  int layers_ = 0;
  double fp8_ = 0;              // a layer's linear weights gathered in FP8 (a dense decoder's)
  double transpose_bytes_ = 0;  // their transposes on Hopper, while the layer's backward runs
  std::optional<CachingAllocator::Handle> transpose_;
  double queue_elements_ = 0;
  double window_ = 0;
  std::size_t gathered_ = 0;
  std::size_t gradients_ = 0;
  std::map<int, CachingAllocator::Handle> resident_;
  std::deque<std::pair<CachingAllocator::Handle, double>> buckets_;
  // The running layer's gradient buckets, made at its backward pass's start, queued at its end.
  std::vector<std::pair<CachingAllocator::Handle, double>> making_;
  Handles wrapped_;
  Handles root_bucket_;
  Handles gathered_slots_;
  Handles gradient_slots_;
  // The double buffer: a unit of the pool's group, and the units whose reduce-scatters are queued
  // (the running one's last), each with its buckets outside the pool.
  int pool_unit_ = 0;
  static constexpr int kRootUnit = -1;  // the bucket outside the layers, in the queue
  std::pair<int, Handles> pooled_making_;
  std::deque<std::pair<int, Handles>> pooled_queue_;
};

}  // namespace fsdp_detail

}  // namespace trainmem::replay
