// The one shape in which the core says whether it could use its input: a status, a message for
// people and the setting at fault. Every result that can be refused carries one; errors are
// values, never exceptions.
#pragma once

#include <string>

namespace trainmem {

enum class Status { kOk, kInvalidInput };

struct [[nodiscard]] Answer {
  Status status = Status::kOk;
  std::string message;  // empty when status is kOk
  std::string setting;  // the refused setting's id ("tp", "seq-len", …; "config" for a
                        // config.json), as the CLI's flag, the URL key and the page's control
  bool ok() const { return status == Status::kOk; }
};

inline Answer refusal(std::string setting, std::string message) {
  return {Status::kInvalidInput, std::move(message), std::move(setting)};
}

}  // namespace trainmem
