// The second WebAssembly module, loaded by the page only when asked: config.json in, JSON and
// CSV out, and "How close is this?" (its cases' notes are text the first view does not need).
// The embind layer only; the work is in config.cpp, report.cpp and measured.cpp.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "setup_types.hpp"
#include "trainmem/config.hpp"
#include "trainmem/measured.hpp"
#include "trainmem/report.hpp"

namespace {

using emscripten::val;

// "How close is this?": each measured case with its figures already in words, as the CLI prints
// them.
val compare_measured_js() {
  val rows = val::array();
  for (const trainmem::MeasuredComparison& comparison : trainmem::compare_measured()) {
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
    rows.call<void>("push", row);
  }
  return rows;
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
}
