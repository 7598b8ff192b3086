#include "trainmem/decimal.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace trainmem {

namespace {

// A GNU extension that GCC, Clang and Emscripten all have; __extension__ says so to -Wpedantic.
__extension__ typedef unsigned __int128 Wide;

constexpr int kMaxDigits = 19;  // significant digits parse_plain_decimal reads: below 2^64
constexpr int kMantissaBits = 53;

constexpr Wide power_of_ten(int exponent) {
  Wide power = 1;
  for (int i = 0; i < exponent; ++i) power *= 10;
  return power;
}

// parse_plain_decimal divides by up to 10^kMaxFixedDecimals and needs a quotient of 55 bits or
// more from a dividend below 2^127; fixed_decimal multiplies a 53-bit mantissa by as much.
static_assert(power_of_ten(kMaxFixedDecimals) < (Wide{1} << 70), "10^kMaxFixedDecimals < 2^70");

int bit_length(Wide value) {
  int bits = 0;
  while (value != 0) {
    ++bits;
    value >>= 1;
  }
  return bits;
}

// value = ±mantissa · 2^exponent, mantissa below 2^53.
struct Binary {
  bool negative;
  std::uint64_t mantissa;
  int exponent;
};

Binary binary_of(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  const bool negative = (bits >> 63) != 0;
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0) return {negative, fraction, -1074};  // zero and the subnormals
  return {negative, fraction | (std::uint64_t{1} << 52), biased - 1075};
}

// The nearest double to (whole + a fraction in (0, 1) if `inexact`) · 2^exponent, ties to even:
// the top 53 bits of `whole`, rounded on the bits below them and on `inexact`. `whole` has 55
// bits or more whenever `inexact`, so that a tie can only come from its own bits.
double nearest_double(Wide whole, bool inexact, int exponent) {
  const int shift = bit_length(whole) - kMantissaBits;
  if (shift <= 0)
    return std::ldexp(static_cast<double>(static_cast<std::uint64_t>(whole)), exponent);
  std::uint64_t mantissa = static_cast<std::uint64_t>(whole >> shift);
  const Wide rest = whole & ((Wide{1} << shift) - 1);
  const Wide half = Wide{1} << (shift - 1);
  if (rest > half || (rest == half && (inexact || (mantissa & 1) != 0))) ++mantissa;
  return std::ldexp(static_cast<double>(mantissa), exponent + shift);
}

}  // namespace

std::string fixed_decimal(double value, int decimals) {
  if (!std::isfinite(value) || decimals < 0 || decimals > kMaxFixedDecimals) return "—";
  const Binary binary = binary_of(value);
  // n = value · 10^decimals rounded half to even, from the exact product mantissa · 10^decimals.
  Wide scaled = 0;
  if (__builtin_mul_overflow(Wide{binary.mantissa}, power_of_ten(decimals), &scaled)) return "—";
  Wide n = 0;
  if (binary.exponent >= 0) {
    if (bit_length(scaled) + binary.exponent > 127) return "—";
    n = scaled << binary.exponent;
  } else if (-binary.exponent < 128) {
    const int shift = -binary.exponent;
    n = scaled >> shift;
    const Wide rest = scaled & ((Wide{1} << shift) - 1);
    const Wide half = Wide{1} << (shift - 1);
    if (rest > half || (rest == half && (n & 1) != 0)) ++n;
  }  // else below 2^-75 before scaling by at most 10^20: rounds to zero

  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(n % 10)));
    n /= 10;
  } while (n != 0);
  const std::size_t places = static_cast<std::size_t>(decimals);
  if (digits.size() <= places) digits.insert(0, places + 1 - digits.size(), '0');
  if (decimals > 0) digits.insert(digits.size() - places, 1, '.');
  return (binary.negative ? "-" : "") + digits;
}

double parse_plain_decimal(std::string_view text) {
  const double not_a_number = std::numeric_limits<double>::quiet_NaN();
  std::size_t at = 0;
  const bool negative = at < text.size() && text[at] == '-';
  if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;

  // The digits, less leading zeros, as an integer `whole` with `place` the power of ten of its
  // last digit; zeros past the first kMaxDigits digits only move the point, any other digit
  // there is outside the domain.
  std::uint64_t whole = 0;
  int digits = 0;
  int place = 0;
  int pending_zeros = 0;  // zeros after the last nonzero digit, not yet in `whole`
  bool any_digit = false;
  bool point = false;
  bool too_many = false;
  for (; at < text.size(); ++at) {
    const char c = text[at];
    if (c == '.') {
      if (point) return not_a_number;
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any_digit = true;
    if (point) --place;
    if (c == '0') {
      if (digits > 0) ++pending_zeros;
      continue;
    }
    // A nonzero digit: the zeros before it become digits of `whole`.
    if (digits + pending_zeros + 1 > kMaxDigits) {
      too_many = true;
      continue;
    }
    for (; pending_zeros > 0; --pending_zeros, ++digits) whole *= 10;
    whole = whole * 10 + static_cast<std::uint64_t>(c - '0');
    ++digits;
  }
  if (!any_digit) return not_a_number;
  // `whole` ends at the last nonzero digit; the place of that digit, from the place of the last
  // digit read.
  place += pending_zeros;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    const bool negative_exponent = at < text.size() && text[at] == '-';
    if (at < text.size() && (text[at] == '-' || text[at] == '+')) ++at;
    int exponent = 0;
    bool exponent_digit = false;
    for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at) {
      exponent_digit = true;
      if (exponent < 100000) exponent = exponent * 10 + (text[at] - '0');
    }
    if (!exponent_digit) return not_a_number;
    place += negative_exponent ? -exponent : exponent;
  }
  if (at != text.size() || too_many) return not_a_number;
  if (whole == 0) return negative ? -0.0 : 0.0;

  double magnitude = 0;
  if (place >= 0) {
    Wide exact = 0;
    if (place > 38 || __builtin_mul_overflow(Wide{whole}, power_of_ten(place), &exact)) {
      return not_a_number;
    }
    magnitude = nearest_double(exact, false, 0);
  } else {
    if (-place > kMaxFixedDecimals) return not_a_number;
    // whole / 10^-place: the quotient of whole · 2^shift, 57 bits or more, and whether the
    // division left a remainder.
    const Wide divisor = power_of_ten(-place);
    const int shift = 127 - bit_length(whole);
    const Wide dividend = Wide{whole} << shift;
    magnitude = nearest_double(dividend / divisor, dividend % divisor != 0, -shift);
  }
  // Below 2^127, where fixed_decimal writes every value whole (shortest_decimal).
  if (magnitude >= std::ldexp(1.0, 127)) return not_a_number;
  return negative ? -magnitude : magnitude;
}

std::string shortest_decimal(double value) {
  for (int decimals = 0; decimals <= kMaxFixedDecimals; ++decimals) {
    std::string text = fixed_decimal(value, decimals);
    if (parse_plain_decimal(text) == value) return text;
  }
  return fixed_decimal(value, kMaxFixedDecimals);
}

}  // namespace trainmem
