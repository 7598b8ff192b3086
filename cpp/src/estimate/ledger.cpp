#include "estimate/ledger.hpp"

#include <algorithm>

#include "trainmem/format.hpp"

namespace trainmem {

double Working::bytes() const {
  double sum = 0;
  for (const Line& line : lines)
    sum += line.subtracted ? -line.figure.value() : line.figure.value();
  return sum;
}

std::string Working::formula() const {
  std::string text;
  for (const Line& line : lines) {
    if (text.empty()) {
      text = line.figure.text();
    } else {
      text += (line.subtracted ? ", less " : " + ") + line.figure.text();
    }
  }
  if (shows_total) text += " = " + format_bytes(bytes());
  return text + after;
}

std::string Working::source() const {
  std::string text;
  for (const std::string& each : sources) text += (text.empty() ? "" : "; ") + each;
  return text;
}

#if TRAINMEM_WRITES_WORDS

void Ledger::add_working(Working working) {
  if (writing()) workings_.push_back(std::move(working));
}

const std::vector<Working>& Ledger::workings() const { return workings_; }

Working* Ledger::find_working(Term term) {
  const auto found = std::find_if(workings_.begin(), workings_.end(), [&](const Working& each) {
    return !each.host && each.id == term_row(term).id;
  });
  return found != workings_.end() ? &*found : nullptr;
}

Working& Ledger::working(Term term) {
  if (Working* found = find_working(term)) return *found;
  Working made;
  made.id = term_row(term).id;
  made.label = term_row(term).label;
  made.term = term;
  workings_.push_back(std::move(made));
  return workings_.back();
}

Working& Ledger::host_working() {
  const auto found = std::find_if(workings_.begin(), workings_.end(),
                                  [](const Working& each) { return each.host; });
  if (found != workings_.end()) return *found;
  Working made;
  made.id = "host";
  made.label = "Host memory";
  made.term = Term::kFp32Gradients;
  made.host = true;
  workings_.push_back(std::move(made));
  return workings_.back();
}

void Ledger::record(Working& working, const Figure& figure, bool subtracted, std::string source) {
  working.lines.push_back({figure, subtracted});
  if (!source.empty() &&
      std::find(working.sources.begin(), working.sources.end(), source) == working.sources.end()) {
    working.sources.push_back(std::move(source));
  }
}

#else  // no workings where words are never written

void Ledger::add_working(Working) {}

const std::vector<Working>& Ledger::workings() const {
  static const std::vector<Working> none;
  return none;
}

Working* Ledger::find_working(Term) { return nullptr; }

Working& Ledger::working(Term) {
  static Working none;
  return none;
}

Working& Ledger::host_working() { return working(Term::kFp32Gradients); }

void Ledger::record(Working&, const Figure&, bool, std::string) {}

#endif

}  // namespace trainmem
