// The first view's module (trainmem.js): the estimator over the plate's view alone
// (plate_estimate; the rest of the core arrives with the full module, json_bindings.cpp). No
// logic lives here.
#include <emscripten/bind.h>

#include "estimate_types.hpp"
#include "estimator_bindings.hpp"
#include "setup_types.hpp"
#include "trainmem/estimate.hpp"

EMSCRIPTEN_BINDINGS(trainmem) {
  trainmem::register_setup_types();
  trainmem::register_estimate_types(false);
  trainmem::estimator_js::register_estimator<trainmem::plate_estimate,
                                             trainmem::plate_workshop_view>();
}
