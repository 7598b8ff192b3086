// Fuzz target: typed text, as a control, a link or a flag gives it: the decimal and whole-number
// parsers, tokens against a sequence length, and any text for any setting, read back as itself
// or refused with a message naming it and the setup left as it was.
#include <cstdint>

#include "fuzz_common.hpp"

using namespace trainmem;
using namespace trainmem::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider data(bytes, size);
  const std::vector<Setting>& all = settings();
  const Setting& setting = all[data.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)];
  const int sequence = data.ConsumeIntegral<int>();
  const int most = data.ConsumeIntegral<int>();
  const std::string text = data.ConsumeRemainingBytesAsString();
  const double decimal = parse_decimal(text);
  require(std::isnan(decimal) || std::isfinite(decimal), "parse_decimal is finite or NaN");
  static_cast<void>(parse_whole_number(text));
  const MicroBatchFromTokens tokens = micro_batch_from_tokens(decimal, sequence, most);
  require(tokens.answer.ok() || !tokens.answer.message.empty(), "tokens refusal has a message");
  TrainingSetup setup;
  const Answer answer = apply_setting(setup, setting.id, text);
  if (answer.ok()) {
    TrainingSetup again;
    require(apply_setting(again, setting.id, setting_text(setup, setting.id)).ok(),
            "a setting's text reads back");
    require(setting_text(again, setting.id) == setting_text(setup, setting.id),
            "a setting's text reads back as the same value");
  } else {
    require(answer.setting == setting.id && !answer.message.empty(),
            "a refused setting is named, with a message");
    require(setting_text(setup, setting.id) == setting.default_text,
            "a refused setting leaves the setup as it was");
  }
  return 0;
}
