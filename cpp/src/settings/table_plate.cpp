// The plate's settings alone: the table of the first view's module (trainmem.wasm), which
// answers the plate's view and nothing beyond it (plate_estimate); every other setting stands at
// its default there, and arrives with the full module (setting_rows.hpp).
#include "settings/setting_rows.hpp"

namespace trainmem::setting_rows {

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = [] {
    Entries plate;
    add_model_and_batch(plate);
    add_logits_and_loss(plate);
    return plate;
  }();
  return table;
}

}  // namespace trainmem::setting_rows
