// The whole table of settings, every group in its order: the core's, the CLI's and the full
// module's (setting_rows.hpp).
#include "settings/setting_rows.hpp"

namespace trainmem::setting_rows {

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = [] {
    Entries all;
    add_model_and_batch(all);
    add_layout(all);
    add_recipe(all);
    add_logits_and_loss(all);
    add_loss_chunks_and_device(all);
    add_fine_tuning(all);
    add_stack(all);
    add_distributed_switches(all);
    add_recompute_modules(all);
    add_megatron_routing(all);
    add_single_device_switches(all);
    add_rollout(all);
    return all;
  }();
  return table;
}

}  // namespace trainmem::setting_rows
