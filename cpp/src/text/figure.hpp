// A number as the core computes it and, when the arithmetic is written out ("Show the
// arithmetic", --explain), as a person reads it: "2 B × 8,030,261,248 parameters". Each step that
// computes a term's bytes computes them with Figures, so that the formula shown is the formula
// computed, written once. Only a Pen that writes gives a Figure words; otherwise a Figure is its
// value alone and costs what a double costs.
#pragma once

#include <string>
#include <string_view>

// The page's first-view estimator (trainmem.wasm) is built without words: it never shows the
// arithmetic, and every character of it would travel to every reader. Everything else (the CLI,
// the on-demand module, the tests) writes them.
#ifdef TRAINMEM_WITHOUT_WORDS
#define TRAINMEM_WRITES_WORDS false
#else
#define TRAINMEM_WRITES_WORDS true
#endif

namespace trainmem {

inline constexpr bool kWritesWords = TRAINMEM_WRITES_WORDS;

// Whether this build answers settings beyond the plate's. The first view's module (built without
// words) answers the plate's alone: a setup crosses into it through its own table of settings,
// the plate's (wasm/setup_types.hpp), so every other setting keeps its default there, and the code
// for another value (LoRA's adapters, FP8's weight copies, offloading, expert parallelism's
// buffers, torchtitan's per-op policy) never runs in it, and drops out of it where a branch asks
// this first. tests/node/plate.test.mjs holds its view to the full module's, figure for figure.
inline constexpr bool kBeyondThePlate = kWritesWords;

// A figure's words: a string, or nothing at all where words are never written.
#if TRAINMEM_WRITES_WORDS
using FigureText = std::string;
#else
struct FigureText {
  FigureText() = default;
  explicit FigureText(const std::string&) {}
  bool empty() const { return true; }
};
#endif

// Words that only describe (a saved tensor's name, what saves it): a string, or, where words are
// never written, nothing at all, so that neither the text nor the work of joining it is carried.
#if TRAINMEM_WRITES_WORDS
using Words = std::string;
#else
struct Words {
  Words() = default;
  Words(const char*) {}         // NOLINT(google-explicit-constructor): stands in for std::string
  Words(const std::string&) {}  // NOLINT(google-explicit-constructor)
  Words& operator+=(const Words&) { return *this; }
  friend Words operator+(const Words&, const Words&) { return {}; }
  operator std::string() const { return {}; }  // NOLINT(google-explicit-constructor)
};
#endif

class Figure {
 public:
  Figure() = default;
  // A figure with no words, for a value that is not shown (or a pen that does not write).
  explicit Figure(double value) : value_(value) {}

  double value() const { return value_; }
  // Empty unless a writing pen made the figure.
  const std::string& text() const;

  // "a + b", "a − b", "a × b", "a / b": a sum in a product or a quotient is put in parentheses.
  friend Figure operator+(const Figure& left, const Figure& right) {
    if constexpr (!kWritesWords) return Figure(left.value_ + right.value_);
    return joined(left.value_ + right.value_, left, " + ", right, Binding::kSum);
  }
  friend Figure operator-(const Figure& left, const Figure& right) {
    if constexpr (!kWritesWords) return Figure(left.value_ - right.value_);
    return joined(left.value_ - right.value_, left, " − ", right, Binding::kDifference);
  }
  friend Figure operator*(const Figure& left, const Figure& right) {
    if constexpr (!kWritesWords) return Figure(left.value_ * right.value_);
    return joined(left.value_ * right.value_, left, " × ", right, Binding::kProduct);
  }
  friend Figure operator/(const Figure& left, const Figure& right) {
    if constexpr (!kWritesWords) return Figure(left.value_ / right.value_);
    return joined(left.value_ / right.value_, left, " / ", right, Binding::kQuotient);
  }

  // The same value followed by a unit: "(34 + 0) B", read as one factor.
  Figure in(std::string_view unit) const;

 private:
  friend class Pen;
  enum class Binding : unsigned char { kAtom, kProduct, kQuotient, kSum, kDifference };
  Figure(double value, std::string text, Binding binding)
      : value_(value), text_(std::move(text)), binding_(binding) {}
  static Figure joined(double value, const Figure& left, const char* sign, const Figure& right,
                       Binding binding);

  double value_ = 0;
  FigureText text_;
  [[maybe_unused]] Binding binding_ = Binding::kAtom;
};

// Makes figures: with words when it writes, as bare values when it does not.
class Pen {
 public:
  explicit Pen(bool writing = false) : writing_(kWritesWords && writing) {}
  bool writing() const { return kWritesWords && writing_; }

  // "4,096"; a fraction to three significant digits: "1.44".
  Figure number(double value) const { return writing() ? written(value, {}) : Figure(value); }
  // "32 layers", "8,192 tokens".
  Figure count(double value, std::string_view unit) const {
    return writing() ? written(value, unit) : Figure(value);
  }
  // "2 B": bytes per something (a parameter, a token, a logit).
  Figure bytes(double value) const { return count(value, "B"); }
  // A value described in words: `words()` is called only when the pen writes.
  template <typename Words>
  Figure said(double value, Words words) const {
    if (writing()) return Figure(value, std::string(words()), Figure::Binding::kAtom);
    return Figure(value);
  }

 private:
  // The value in words, and its unit after it when there is one.
  static Figure written(double value, std::string_view unit);
  bool writing_ = false;
};

// A fraction to three significant digits, as C's "%.3g" writes it ("1.44", "4.65e+04"); a whole
// number with separators ("8,192"). Words only: the build without them (TRAINMEM_WITHOUT_WORDS)
// writes every number as a whole one and carries no printf.
std::string number_text(double value);

}  // namespace trainmem
