#include "trainmem/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "trainmem/decimal.hpp"

namespace trainmem {

namespace {

constexpr int kMaxDecimals = 3;
constexpr double kLargestFormattedBytes = 1e30;  // a million yottabytes: beyond any estimate
constexpr double kLargestFormattedCount = 1e15;  // still exact in a double, still readable

// "12.5" and " GB" -> "12.5 GB"; a value past fixed_decimal's domain stays "—", with no unit.
std::string with_unit(const std::string& number, const char* unit) {
  return number == "—" ? number : number + unit;
}

}  // namespace

std::string format_bytes(double bytes, int decimals) {
  if (!std::isfinite(bytes) || std::fabs(bytes) > kLargestFormattedBytes) return "—";
  decimals = std::clamp(decimals, 0, kMaxDecimals);
  const double rounding = std::pow(10.0, decimals);
  const double gigabytes = std::round(bytes / kBytesPerGigabyte * rounding) / rounding;
  if (std::fabs(gigabytes) < 1000) return with_unit(fixed_decimal(gigabytes, decimals), " GB");
  return with_unit(fixed_decimal(bytes / kBytesPerTerabyte, decimals), " TB");
}

std::string format_change(double from_bytes, double to_bytes) {
  const double difference = to_bytes - from_bytes;
  const std::string amount = format_bytes(std::fabs(difference));
  if (amount == format_bytes(0)) return "the same";
  return amount + (difference < 0 ? " less" : " more");
}

std::string format_bytes_short(double bytes) {
  std::string text = format_bytes(bytes, 2);
  const std::size_t space = text.find(' ');
  const std::size_t dot = text.find('.');
  if (dot == std::string::npos || space == std::string::npos) return text;
  std::size_t end = space;
  while (end > dot + 1 && text[end - 1] == '0') --end;
  if (end == dot + 1) end = dot;
  return text.substr(0, end) + text.substr(space);
}

std::string format_worth(double devices_worth) {
  if (!std::isfinite(devices_worth)) return "—";
  // Where one decimal would show 1.0 for a total above or below one device, the digits that tell
  // which side it is on.
  std::string text = fixed_decimal(devices_worth, 1);
  for (int decimals = 2; decimals <= kMaxDecimals && devices_worth != 1 && text == "1.0";
       ++decimals) {
    text = fixed_decimal(devices_worth, decimals);
    if (parse_plain_decimal(text) == 1) text = "1.0";
  }
  // A small model's total, which one decimal would show as none of a device: more digits, and
  // below the last of them, a bound.
  for (int decimals = 2;
       decimals <= kMaxDecimals && devices_worth > 0 && text == fixed_decimal(0, decimals - 1);
       ++decimals) {
    text = fixed_decimal(devices_worth, decimals);
  }
  if (devices_worth > 0 && text == fixed_decimal(0, kMaxDecimals))
    text = "< " + fixed_decimal(1e-3, kMaxDecimals);
  return text;
}

std::string format_percent(double percent) {
  if (!std::isfinite(percent)) return "—";
  std::string text = fixed_decimal(percent, 2);
  if (text == "—") return text;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text + "%";
}

std::string format_share(double fraction) {
  if (!std::isfinite(fraction)) return "—";
  return with_unit(fixed_decimal(fraction * 100, 0), "%");
}

std::string format_parameters(double num_parameters) {
  if (!std::isfinite(num_parameters)) return "—";
  if (num_parameters >= 1e9) return with_unit(fixed_decimal(num_parameters / 1e9, 2), " B");
  return with_unit(fixed_decimal(num_parameters / 1e6, 1), " M");
}

std::string format_count(double count) {
  if (!std::isfinite(count) || std::fabs(count) > kLargestFormattedCount) return "—";
  std::string digits = fixed_decimal(std::round(std::fabs(count)), 0);
  std::string grouped;
  const int length = static_cast<int>(digits.size());
  for (int i = 0; i < length; ++i) {
    if (i > 0 && (length - i) % 3 == 0) grouped += ',';
    grouped += digits[static_cast<std::size_t>(i)];
  }
  return (count < 0 ? "-" : "") + grouped;
}

namespace {

// "16,384" as the page and the CLI write it: a number whose whole part is grouped by threes with
// commas, its commas removed; any other text as it is (so that "1,6384" stays refused).
std::string without_group_commas(std::string_view text) {
  const std::size_t comma = text.find(',');
  if (comma == std::string_view::npos) return std::string(text);
  const std::size_t sign = text.empty() || text[0] == '-' || text[0] == '+' ? 1 : 0;
  const std::size_t whole_end = std::min(text.find_first_of(".eE"), text.size());
  const std::string_view whole = text.substr(sign, whole_end - sign);
  const std::size_t first_group = whole.find(',');
  bool grouped = first_group >= 1 && first_group <= 3;
  for (std::size_t index = first_group; grouped && index < whole.size(); index += 4) {
    grouped = whole[index] == ',' && index + 4 <= whole.size() &&
              whole.substr(index + 1, 3).find_first_not_of("0123456789") == std::string_view::npos;
  }
  if (!grouped || text.find(',', whole_end) != std::string_view::npos) return std::string(text);
  std::string plain;
  for (char c : text) {
    if (c != ',') plain += c;
  }
  return plain;
}

}  // namespace

int parse_whole_number(std::string_view typed) {
  const std::string plain = without_group_commas(typed);
  const std::string_view text = plain;
  int value = 0;
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, value);
  return !text.empty() && error == std::errc() && end == last ? value : kNotAWholeNumber;
}

double parse_decimal(std::string_view typed) {
  // Not std::from_chars, which Emscripten's libc++ lacks for double, nor strtod: see decimal.hpp.
  const double value = parse_plain_decimal(without_group_commas(typed));
  return std::isfinite(value) ? value : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace trainmem
