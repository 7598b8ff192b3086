// The `trainmem` command's output: the breakdown of one estimate, and a table of views, each a
// flag that prints one thing instead (--fit, --timeline, …).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "trainmem/answer.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/verdict.hpp"

namespace trainmem {

// Exit statuses: 0 success, 2 bad input (one line on `err` naming the flag and what is allowed);
// under --launch, 0 fits, 1 uncertain and 3 does not fit, so that a launch script can gate on it.
constexpr int kExitOk = 0;
constexpr int kExitUncertain = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitDoesNotFit = 3;

void print_breakdown(const Estimate& estimate, std::ostream& out);
// A launch config as read: its kind, what it read, what it set that is not understood, notes.
void print_launch(const LaunchConfig& launch, std::ostream& out);
// The verdict and its band, with the runs it comes from.
void print_verdict(const VerdictAnswer& verdict, std::ostream& out);
void print_models(std::ostream& out);
void print_devices(std::ostream& out);  // id, name, memory, architecture and source

struct View {
  const char* flag;  // "--fit"
  const char* help;
  bool has_json;  // whether --json applies
  // What the view does with the settings: uses them, ignores them (each measured case has its
  // own), chooses the layout and recomputation itself (--fit), or lists the llama-block model's
  // tensors.
  enum class Uses { kSettings, kOwnSettings, kChoosesLayout, kLlamaBlockModel } uses;
  // Prints the view of `setup` (checked by the core inside), as JSON when asked; the exit status.
  int (*print)(const TrainingSetup& setup, bool json, std::ostream& out, std::ostream& err);
};

// Every view, in the order --help lists them; a command gives at most one.
const std::vector<View>& views();

// One line on `err`, "trainmem: " first; returns kExitBadInput.
int bad_input(std::ostream& err, const std::string& message);

// The core's refusal, named by the setting's flag: "--tp: Tensor parallelism 3 must divide …".
int refused(const Answer& answer, std::ostream& err);

// The flag that gives a setting: --seq-len, or --no-flash-attention for a switch that is on by
// default.
std::string flag_of(const Setting& setting);

}  // namespace trainmem
