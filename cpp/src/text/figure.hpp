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

class Figure {
 public:
  Figure() = default;
  // A figure with no words, for a value that is not shown (or a pen that does not write).
  explicit Figure(double value) : value_(value) {}

  double value() const { return value_; }
  // Empty unless a writing pen made the figure.
  const std::string& text() const { return text_; }

  // "a + b", "a − b", "a × b", "a / b": a sum in a product or a quotient is put in parentheses.
  friend Figure operator+(const Figure& left, const Figure& right);
  friend Figure operator-(const Figure& left, const Figure& right);
  friend Figure operator*(const Figure& left, const Figure& right);
  friend Figure operator/(const Figure& left, const Figure& right);

  // The same value followed by a unit: "(34 + 0) B", read as one factor.
  Figure in(std::string_view unit) const;
  // The same value with words of its own ("one layer rebuilt (1.2 GB)"), when it has words.
  Figure called(std::string text) const;

 private:
  friend class Pen;
  enum class Binding : unsigned char { kAtom, kProduct, kSum };
  Figure(double value, std::string text, Binding binding)
      : value_(value), text_(std::move(text)), binding_(binding) {}
  static std::string operand(const Figure& figure, bool in_product);
  static Figure joined(double value, const Figure& left, const char* sign, const Figure& right,
                       Binding binding);

  double value_ = 0;
  std::string text_;
  Binding binding_ = Binding::kAtom;
};

// Makes figures: with words when it writes, as bare values when it does not.
class Pen {
 public:
  explicit Pen(bool writing = false) : writing_(kWritesWords && writing) {}
  bool writing() const { return kWritesWords && writing_; }

  // "4,096"; a fraction to three significant digits: "1.44".
  Figure number(double value) const;
  // "32 layers", "8,192 tokens".
  Figure count(double value, std::string_view unit) const;
  // "2 B": bytes per something (a parameter, a token, a logit).
  Figure bytes(double value) const { return count(value, "B"); }
  // "1.2 GB": bytes as the totals are written (format_bytes).
  Figure amount(double bytes) const;
  // A value described in words: `words()` is called only when the pen writes.
  template <typename Words>
  Figure said(double value, Words words) const {
    if (writing()) return Figure(value, std::string(words()), Figure::Binding::kAtom);
    return Figure(value);
  }

 private:
  bool writing_ = false;
};

// A fraction to three significant digits, as C's "%.3g" writes it ("1.44", "4.65e+04"); a whole
// number with separators ("8,192").
std::string number_text(double value);

}  // namespace trainmem
