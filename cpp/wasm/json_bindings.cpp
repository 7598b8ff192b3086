// The full module (trainmem-full.js), loaded by the page when a reader goes further, and by
// other pages (trainmem-api.js): the estimator over every setup (estimator_bindings.hpp),
// config.json and launch configs in, JSON and CSV out, "How close is this?" and the verdict with
// its band; its exploration views are explore_bindings.cpp's. The embind layer only; the work is
// in config.cpp, launch.cpp, report.cpp, measured.cpp and verdict.cpp.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <string>
#include <vector>

#include "estimator_bindings.hpp"
#include "setup_types.hpp"
#include "trainmem/config.hpp"
#include "trainmem/estimate.hpp"
#include "trainmem/format.hpp"
#include "trainmem/launch.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/report.hpp"
#include "trainmem/settings.hpp"
#include "trainmem/verdict.hpp"

namespace {

using emscripten::val;

// The measured cases never change: compared once, when first asked for.
const std::vector<trainmem::MeasuredComparison>& comparisons() {
  static const std::vector<trainmem::MeasuredComparison> all = trainmem::compare_measured();
  return all;
}

// "How close is this?": each measured case with its figures already in words, as the CLI prints
// them.
val compare_measured_js() {
  val rows = val::array();
  for (const trainmem::MeasuredComparison& comparison : comparisons()) {
    const trainmem::MeasuredCase& measured = comparison.measured;
    const auto figure = [&](double bytes) {
      return trainmem::format_as_measured(bytes, measured.unit);
    };
    val row = val::object();
    row.set("id", measured.id);
    row.set("title", measured.title);
    row.set("citation", measured.citation);
    row.set("source", measured.source);
    row.set("statistic", measured.statistic);
    row.set("quantity", trainmem::quantity_id(measured.quantity));
    row.set("note", measured.note);
    row.set("ok", comparison.answer.ok());
    row.set("message", comparison.answer.message);
    row.set("measured", figure(measured.measured_bytes));
    row.set("korthikanti", figure(comparison.korthikanti_bytes));
    row.set("llamaBlock", figure(comparison.llama_block_bytes));
    row.set("korthikantiError",
            trainmem::format_error_percent(comparison.korthikanti_error_percent));
    row.set("llamaBlockError",
            trainmem::format_error_percent(comparison.llama_block_error_percent));
    row.set("korthikantiErrorPercent", comparison.korthikanti_error_percent);
    row.set("llamaBlockErrorPercent", comparison.llama_block_error_percent);
    // Another tool's estimate of the same run, published with it; "" where there is none.
    const bool other = !measured.other_estimate_name.empty();
    row.set("otherEstimateName", measured.other_estimate_name);
    row.set("otherEstimate", other ? figure(measured.other_estimate_bytes) : std::string());
    row.set("otherEstimateError",
            other ? trainmem::format_error_percent(comparison.other_estimate_error_percent)
                  : std::string());
    rows.call<void>("push", row);
  }
  return rows;
}

val strings(const std::vector<std::string>& texts) {
  val array = val::array();
  for (const std::string& text : texts) array.call<void>("push", text);
  return array;
}

// Where trainmem stands against another tool's estimates of the same measured runs, a sentence
// for each tool and quantity.
val measured_standing_js() {
  return strings(trainmem::standing_against_other_estimates(comparisons()));
}

// A launch config read over `setup` (the device and what else the file does not say), YAML with
// the page's parser `yaml_to_json` (a function; anything else: YAML is refused):
// {answer, setup, kind, read, notUnderstood, notes, leaves}.
val read_launch_js(const std::string& text, const trainmem::TrainingSetup& setup, int world_size,
                   val yaml_to_json) {
  trainmem::LaunchContext context;
  context.world_size = world_size;
  // The page's YAML parser (web/src/yaml.js): text in, {json, problem} out.
  if (yaml_to_json.typeOf().as<std::string>() == "function") {
    context.read_yaml = [yaml_to_json](const std::string& yaml) {
      const val parsed = yaml_to_json(yaml);
      return trainmem::YamlAsJson{parsed["json"].as<std::string>(),
                                  parsed["problem"].as<std::string>()};
    };
  }
  const trainmem::LaunchConfig launch = trainmem::read_launch_config(text, setup, context);
  val out = val::object();
  out.set("answer", launch.answer);
  out.set("setup", launch.setup);
  out.set("kind", launch.kind);
  out.set("read", strings(launch.read));
  out.set("notUnderstood", strings(launch.not_understood));
  out.set("notes", strings(launch.notes));
  out.set("leaves", strings(launch.leaves));
  return out;
}

// The verdict on `setup`'s estimate, in words: {answer, verdict, reason, fromBand, band: [{title,
// error}…]}; the headroom decides where `headroom_asked`; the launch config's keys not understood
// (an array of strings) withhold it.
val verdict_js(const trainmem::TrainingSetup& setup, bool headroom_asked,
               const val& not_understood) {
  val out = val::object();
  const trainmem::Estimate estimate = trainmem::estimate_memory(setup);
  out.set("answer", estimate.answer);
  if (!estimate.answer.ok()) return out;
  const trainmem::VerdictAnswer verdict = trainmem::verdict_of(
      estimate, headroom_asked, emscripten::vecFromJSArray<std::string>(not_understood));
  out.set("verdict", std::string(trainmem::verdict_words(verdict.verdict)));
  out.set("reason", verdict.reason);
  out.set("fromBand", verdict.from_band);
  val band = val::array();
  for (std::size_t index = 0; index < verdict.band.case_ids.size(); ++index) {
    val row = val::object();
    row.set("id", verdict.band.case_ids[index]);
    row.set("title", verdict.band.case_titles[index]);
    row.set("error", trainmem::format_error_percent(verdict.band.case_errors_percent[index]));
    band.call<void>("push", row);
  }
  out.set("band", band);
  return out;
}

// What the setup's stack brings where the reader has not chosen (the settings' ids `chosen`, an
// array of strings): {setup, brought: [{settingId, text, by}…]}, `by` who brought it ("The
// torchtune stack", "verl (1dda039b)").
val bring_stack_defaults_js(const trainmem::TrainingSetup& given, const val& chosen) {
  trainmem::TrainingSetup setup = given;
  const std::vector<std::string> ids = emscripten::vecFromJSArray<std::string>(chosen);
  const std::vector<trainmem::BroughtSetting> brought = trainmem::bring_stack_defaults(
      setup,
      [&](const std::string& id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); });
  val out = val::object();
  out.set("setup", setup);
  val list = val::array();
  for (const trainmem::BroughtSetting& each : brought) {
    val row = val::object();
    row.set("settingId", each.setting_id);
    row.set("text", each.text);
    row.set("by", each.by);
    list.call<void>("push", row);
  }
  out.set("brought", list);
  return out;
}

trainmem::ConfigParse parse_hf_config_js(const std::string& text, bool text_tower) {
  return trainmem::parse_hf_config(text, text_tower);
}

trainmem::ConfigText text_tower_config_js(const std::string& text) {
  return trainmem::text_tower_config_text(text);
}

}  // namespace

EMSCRIPTEN_BINDINGS(trainmem_json) {
  using namespace emscripten;
  using namespace trainmem;

  register_setup_types();
  estimator_js::register_estimator<estimate_memory, workshop_view>();

  value_object<ConfigParse>("ConfigParse")
      .field("answer", &ConfigParse::answer)
      .field("shape", &ConfigParse::shape);
  value_object<ConfigText>("ConfigText")
      .field("answer", &ConfigText::answer)
      .field("text", &ConfigText::text);

  constant("maxConfigBytes", kMaxConfigBytes);

  function("parseHfConfig", &parse_hf_config_js);
  function("textTowerConfig", &text_tower_config_js);
  function("setupToJson", &setup_to_json);
  function("setupToCsv", &setup_to_csv);
  function("compareMeasured", &compare_measured_js);
  function("measuredStanding", &measured_standing_js);
  function("readLaunchConfig", &read_launch_js);
  function("launchVerdict", &verdict_js);
  function("bringStackDefaults", &bring_stack_defaults_js);
}
