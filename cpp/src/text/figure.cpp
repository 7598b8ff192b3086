#include "text/figure.hpp"

#include <cmath>
#include <cstdio>

#include "trainmem/format.hpp"

namespace trainmem {

#if TRAINMEM_WRITES_WORDS

const std::string& Figure::text() const { return text_; }

Figure Figure::joined(double value, const Figure& left, const char* sign, const Figure& right,
                      Binding binding) {
  if (left.text_.empty() && right.text_.empty()) return Figure(value);
  // Brackets where reading left to right would mislead: a sum as a factor, a sum or a difference
  // taken away, a product or a quotient as a divisor.
  const auto bracketed = [](const Figure& figure, bool bracket) {
    return bracket ? "(" + figure.text_ + ")" : figure.text_;
  };
  const bool product = binding == Binding::kProduct || binding == Binding::kQuotient;
  const auto is_sum = [](const Figure& figure) {
    return figure.binding_ == Binding::kSum || figure.binding_ == Binding::kDifference;
  };
  const bool right_bracket = (product && is_sum(right)) ||
                             (binding == Binding::kDifference && is_sum(right)) ||
                             (binding == Binding::kQuotient && right.binding_ != Binding::kAtom);
  return Figure(value,
                bracketed(left, product && is_sum(left)) + sign + bracketed(right, right_bracket),
                binding == Binding::kQuotient ? Binding::kProduct : binding);
}

Figure Figure::in(std::string_view unit) const {
  if (text_.empty()) return *this;
  const bool sum = binding_ == Binding::kSum || binding_ == Binding::kDifference;
  return Figure(value_, (sum ? "(" + text_ + ")" : text_) + " " + std::string(unit),
                Binding::kAtom);
}

std::string number_text(double value) {
  if (std::trunc(value) == value && std::fabs(value) < 1e15) return format_count(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

Figure Pen::written(double value, std::string_view unit) {
  std::string text = number_text(value);
  if (!unit.empty()) text += " " + std::string(unit);
  return Figure(value, std::move(text), Figure::Binding::kAtom);
}

#else  // the words are never written: figures are their values

const std::string& Figure::text() const {
  static const std::string none;
  return none;
}

Figure Figure::joined(double value, const Figure&, const char*, const Figure&, Binding) {
  return Figure(value);
}

Figure Figure::in(std::string_view) const { return *this; }

std::string number_text(double value) { return format_count(value); }

Figure Pen::written(double value, std::string_view) { return Figure(value); }

#endif

}  // namespace trainmem
