#include "text/figure.hpp"

#include <cmath>
#include <cstdio>

#include "trainmem/format.hpp"

namespace trainmem {

std::string Figure::operand(const Figure& figure, bool in_product) {
  const bool bracket = figure.binding_ == Binding::kSum && in_product;
  return bracket ? "(" + figure.text_ + ")" : figure.text_;
}

Figure Figure::joined(double value, const Figure& left, const char* sign, const Figure& right,
                      Binding binding) {
  if (left.text_.empty() && right.text_.empty()) return Figure(value);
  const bool product = binding == Binding::kProduct;
  return Figure(value, operand(left, product) + sign + operand(right, product), binding);
}

Figure operator+(const Figure& left, const Figure& right) {
  return Figure::joined(left.value_ + right.value_, left, " + ", right, Figure::Binding::kSum);
}

Figure operator-(const Figure& left, const Figure& right) {
  // What is taken away is bracketed when it is a sum itself: a − (b + c).
  Figure bracketed = right;
  if (right.binding_ == Figure::Binding::kSum && !right.text_.empty()) {
    bracketed = Figure(right.value_, "(" + right.text_ + ")", Figure::Binding::kAtom);
  }
  return Figure::joined(left.value_ - right.value_, left, " − ", bracketed, Figure::Binding::kSum);
}

Figure operator*(const Figure& left, const Figure& right) {
  return Figure::joined(left.value_ * right.value_, left, " × ", right, Figure::Binding::kProduct);
}

Figure operator/(const Figure& left, const Figure& right) {
  // A divisor that is a product is bracketed: a / (b × c).
  Figure divisor = right;
  if (right.binding_ != Figure::Binding::kAtom && !right.text_.empty()) {
    divisor = Figure(right.value_, "(" + right.text_ + ")", Figure::Binding::kAtom);
  }
  return Figure::joined(left.value_ / right.value_, left, " / ", divisor,
                        Figure::Binding::kProduct);
}

Figure Figure::in(std::string_view unit) const {
  if (text_.empty()) return *this;
  return Figure(value_, operand(*this, true) + " " + std::string(unit), Binding::kAtom);
}

Figure Figure::called(std::string text) const {
  if (text_.empty()) return *this;
  return Figure(value_, std::move(text), Binding::kAtom);
}

std::string number_text(double value) {
  if (std::trunc(value) == value && std::fabs(value) < 1e15) return format_count(value);
  if constexpr (kWritesWords) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3g", value);
    return buffer;
  }
  return format_count(value);
}

Figure Pen::number(double value) const {
  if (!writing()) return Figure(value);
  return Figure(value, number_text(value), Figure::Binding::kAtom);
}

Figure Pen::count(double value, std::string_view unit) const {
  if (!writing()) return Figure(value);
  return Figure(value, number_text(value) + " " + std::string(unit), Figure::Binding::kAtom);
}

Figure Pen::amount(double bytes) const {
  if (!writing()) return Figure(bytes);
  return Figure(bytes, format_bytes(bytes), Figure::Binding::kAtom);
}

}  // namespace trainmem
