// Where the estimate's steps put their bytes: each term's total on the device and on the host
// and, when the arithmetic is written out, each term's working as it was computed (its lines,
// their words and their sources). "Show the arithmetic" and --explain read these workings
// (views/explain.cpp); nothing restates a formula.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "text/figure.hpp"
#include "trainmem/terms.hpp"

namespace trainmem {

// One line of a term's working: a figure added to the term, or taken from it ("less …").
struct Line {
  Figure figure;
  bool subtracted = false;
};

// The arithmetic of one term (or of a stack's own term, or of the host's memory), as computed:
// its lines sum to its bytes.
struct Working {
  std::string id;     // the term's id ("weights"), "stack-" and a stack term's, or "host"
  std::string label;  // "Weights"
  Term term = Term::kWeights;
  bool host = false;  // the host's memory, all its terms together
  std::vector<Line> lines;
  std::vector<std::string> sources;
  std::string after;        // said after the total: "; at the step's peak …"
  bool shows_total = true;  // "… = 36.5 GB"; a single amount needs none

  double bytes() const;
  // The lines in words, their total and what follows: "2 B × 8,030,261,248 parameters = 16.1 GB".
  std::string formula() const;
  std::string source() const;  // the sources, each once, "; " between them
};

class Ledger {
 public:
  explicit Ledger(bool writing = false) : pen_(writing) {}
  const Pen& pen() const { return pen_; }
  bool writing() const { return pen_.writing(); }

  // Adds `figure` to `term` on the device, or takes it off; when the pen writes, as a line of the
  // term's working, with `source()`'s words (called only then) among its sources.
  template <typename Source>
  void add(Term term, const Figure& figure, Source source) {
    device[term] += figure.value();
    if (writing()) record(working(term), figure, false, source());
  }
  template <typename Source>
  void subtract(Term term, const Figure& figure, Source source) {
    device[term] -= figure.value();
    if (writing()) record(working(term), figure, true, source());
  }
  // The host's memory: `figure` of `term` held there, a line of the host's working.
  template <typename Source>
  void add_to_host(Term term, const Figure& figure, Source source) {
    host[term] += figure.value();
    if (writing()) record(host_working(), figure, false, source());
  }

  // A working of its own, for what the estimate adds beyond the table's terms (a stack's own
  // terms, the allocator's cache): its lines are not added here.
  void add_working(Working working);

  // The working of `term`, if there is one.
  Working* find_working(Term term);
  // Every working, in the order the terms were first computed.
  const std::vector<Working>& workings() const;

  Breakdown device;
  Breakdown host;

 private:
  // The working of `term`, made when first asked for (the pen writes).
  Working& working(Term term);
  Working& host_working();
  static void record(Working& working, const Figure& figure, bool subtracted, std::string source);

  Pen pen_;
#if TRAINMEM_WRITES_WORDS
  std::vector<Working> workings_;  // none where words are never written
#endif
};

}  // namespace trainmem
