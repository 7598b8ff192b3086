#include "trainmem/format.hpp"

#include <cmath>
#include <cstdio>

namespace trainmem {

namespace {

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace

std::string format_bytes(double bytes, int decimals) {
  if (!std::isfinite(bytes)) return "—";
  const double rounding = std::pow(10.0, decimals);
  const double gigabytes = std::round(bytes / kBytesPerGigabyte * rounding) / rounding;
  if (std::fabs(gigabytes) < 1000) return fixed(gigabytes, decimals) + " GB";
  return fixed(bytes / kBytesPerTerabyte, decimals) + " TB";
}

std::string format_parameters(double num_parameters) {
  if (!std::isfinite(num_parameters)) return "—";
  if (num_parameters >= 1e9) return fixed(num_parameters / 1e9, 2) + " B";
  return fixed(num_parameters / 1e6, 1) + " M";
}

std::string format_count(double count) {
  if (!std::isfinite(count)) return "—";
  std::string digits = fixed(std::round(std::fabs(count)), 0);
  std::string grouped;
  const int length = static_cast<int>(digits.size());
  for (int i = 0; i < length; ++i) {
    if (i > 0 && (length - i) % 3 == 0) grouped += ',';
    grouped += digits[static_cast<std::size_t>(i)];
  }
  return (count < 0 ? "-" : "") + grouped;
}

}  // namespace trainmem
