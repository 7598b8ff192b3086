// decimal.hpp against the C library it stands in for: printf("%.*f") and strtod, on the values
// and texts where each case is hard (ties, carries, the edges of the domain) and on 200,000 random
// ones each. Under Node (trainmem_tests.js) the C library is Emscripten's musl, the page's own.
#include "trainmem/decimal.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace decimal_test {

namespace {

using trainmem::fixed_decimal;
using trainmem::parse_plain_decimal;
using trainmem::shortest_decimal;

constexpr int kRandomCases = 200000;

std::string printf_fixed(double value, int decimals) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

double strtod_whole(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

bool same_double(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;  // -0.0 and 0.0 apart
}

// A double with random bits in [2^low, 2^high), either sign.
double random_double(std::mt19937_64& random, int low, int high) {
  std::uniform_int_distribution<int> exponent(low, high - 1);
  const double mantissa = 1.0 + static_cast<double>(random() >> 12) / 4503599627370496.0;
  const double value = std::ldexp(mantissa, exponent(random));
  return (random() & 1) != 0 ? -value : value;
}

}  // namespace

TEST_CASE("fixed_decimal writes what printf writes at each hard case") {
  const struct {
    double value;
    int decimals;
  } cases[] = {
      {0.0, 0},     {-0.0, 1}, {0.125, 2},  {0.375, 2},    {2.5, 0},         {3.5, 0},
      {-0.04, 1},   {-2.5, 0}, {9.9996, 3}, {999.95, 1},   {0.05, 1},        {1e-300, 3},
      {5e-324, 20}, {0.1, 20}, {165.0, 1},  {1.0 / 3, 17}, {123456789.5, 0}, {1e18, 3},
      {1e18, 20},   {1e15, 0}, {2.675, 2},  {1.005, 2},    {0.0005, 3},      {-0.0005, 3},
      {4.35, 1},    {4.45, 1}, {1e-20, 20}, {5e-21, 20},   {1.5e-20, 20},    {8.0e9, 2},
  };
  for (const auto& c : cases) {
    CAPTURE(c.value);
    CAPTURE(c.decimals);
    CHECK(fixed_decimal(c.value, c.decimals) == printf_fixed(c.value, c.decimals));
  }
}

TEST_CASE("fixed_decimal writes what printf writes for random values and decimals") {
  std::mt19937_64 random(20261201);
  std::uniform_int_distribution<int> decimals(0, trainmem::kMaxFixedDecimals);
  for (int i = 0; i < kRandomCases; ++i) {
    const int places = decimals(random);
    // Up to 2^56 (below 10^17, where every number of decimals is inside the domain), and as small
    // as printf writes as zero, at each scale.
    const double value = random_double(random, -80, 56);
    if (fixed_decimal(value, places) != printf_fixed(value, places)) {
      CAPTURE(value);
      CAPTURE(places);
      REQUIRE(fixed_decimal(value, places) == printf_fixed(value, places));
    }
  }
}

TEST_CASE("fixed_decimal writes a dash outside its domain, never a wrong figure") {
  CHECK(fixed_decimal(1e40, 0) == "—");
  CHECK(fixed_decimal(1e19, 20) == "—");
  CHECK(fixed_decimal(std::numeric_limits<double>::infinity(), 1) == "—");
  CHECK(fixed_decimal(std::numeric_limits<double>::quiet_NaN(), 1) == "—");
  CHECK(fixed_decimal(1.5, -1) == "—");
  CHECK(fixed_decimal(1.5, trainmem::kMaxFixedDecimals + 1) == "—");
  // Just inside: below 2^127 once scaled.
  CHECK(fixed_decimal(1e38, 0) == printf_fixed(1e38, 0));
}

TEST_CASE("parse_plain_decimal reads what strtod reads at each hard case") {
  const char* texts[] = {
      "0",
      "-0",
      "+0.000",
      "80",
      "8.192e3",
      "8192E-0",
      "0.1",
      ".5",
      "5.",
      "-.25e+1",
      "16384",
      "1e-21",
      "9.99e-19",
      "123456789012345678e-21",
      "9007199254740993",     // 2^53 + 1: a tie, to even
      "9007199254740995",     // 2^53 + 3: a tie, to even (up)
      "9007199254740993e-5",  // the same digits, a quotient
      "0.30000000000000004",
      "2.2250738585072014e-308e0",  // not a number: two exponents
      "1.7976931348623157e38",
      "3.4028236692093846e38",                       // just below 2^128, rounded up to it
      "170141183460469231731687303715884105728e-0",  // 2^127: 39 digits, 15 of them zeros
      "1000000000000000000000000",
      "0.000000000000000000001",
      "4.35",
      "1.005",
  };
  for (const char* text : texts) {
    CAPTURE(text);
    const double ours = parse_plain_decimal(text);
    if (std::isnan(ours)) continue;  // outside the domain: checked below
    CHECK(same_double(ours, strtod_whole(text)));
  }
  CHECK(std::isnan(parse_plain_decimal("2.2250738585072014e-308e0")));
}

TEST_CASE("parse_plain_decimal refuses what is not a plain decimal, or is outside its domain") {
  const char* texts[] = {"",
                         "-",
                         ".",
                         "+.e1",
                         " 1",
                         "1 ",
                         "1e",
                         "1e+",
                         "1..2",
                         "1.2.",
                         "inf",
                         "nan",
                         "0x10",
                         "1,000",
                         "--1",
                         "1e-22",
                         "1e39",
                         "1e400",
                         "1e-400",
                         "12345678901234567891",
                         "0.00000000000000000000001"};
  for (const char* text : texts) {
    CAPTURE(text);
    CHECK(std::isnan(parse_plain_decimal(text)));
  }
  // Zeros around the digits are not digits of the domain's 19.
  CHECK(parse_plain_decimal("000000000000000000000012.5000000000000000000000") == 12.5);
  CHECK(parse_plain_decimal("1234567890123456789") == strtod_whole("1234567890123456789"));
  CHECK(parse_plain_decimal("0e-99999") == 0);
}

TEST_CASE("parse_plain_decimal reads what strtod reads for random texts") {
  std::mt19937_64 random(1201);
  std::uniform_int_distribution<int> digit_count(1, 19);
  std::uniform_int_distribution<int> digit(0, 9);
  for (int i = 0; i < kRandomCases; ++i) {
    // Digits with the point among them and an exponent that keeps the last digit within 21
    // decimals (so inside the domain); or a double's 17 significant digits, which may lie past.
    std::string text;
    const bool inside = i % 2 == 0;
    if (inside) {
      const int count = digit_count(random);
      const int point = std::uniform_int_distribution<int>(0, count)(random);
      for (int d = 0; d < count; ++d) {
        if (d == point) text += '.';
        text += static_cast<char>('0' + digit(random));
      }
      const int decimals = count - point;
      text += "e" + std::to_string(std::uniform_int_distribution<int>(decimals - 21, 18)(random));
    } else {
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%.17g", std::fabs(random_double(random, -60, 120)));
      text = buffer;
    }
    const double ours = parse_plain_decimal(text);
    if (!inside && std::isnan(ours)) continue;
    if (!same_double(ours, strtod_whole(text))) {
      CAPTURE(text);
      REQUIRE(same_double(ours, strtod_whole(text)));
    }
  }
}

TEST_CASE("shortest_decimal finds a text that reads back for every value read from text") {
  // Found by the fuzzer (fuzz_core: a setting's text reads back as the same value): 22 digits
  // after the point, its last nonzero digit at the 21st.
  const double fuzzed = parse_plain_decimal("0.0000000007777710000050");
  REQUIRE(!std::isnan(fuzzed));
  CHECK(parse_plain_decimal(shortest_decimal(fuzzed)) == fuzzed);
  std::mt19937_64 random(31);
  std::uniform_int_distribution<int> digit_count(1, 19);
  std::uniform_int_distribution<int> digit(0, 9);
  for (int i = 0; i < kRandomCases / 10; ++i) {
    // Digits ending anywhere from the 21st decimal to the 18th power of ten.
    std::string text;
    const int count = digit_count(random);
    for (int d = 0; d < count; ++d) text += static_cast<char>('0' + digit(random));
    text += "e" + std::to_string(std::uniform_int_distribution<int>(-trainmem::kMaxFixedDecimals,
                                                                    18 - count)(random));
    const double value = parse_plain_decimal(text);
    if (std::isnan(value) || parse_plain_decimal(shortest_decimal(value)) != value) {
      CAPTURE(text);
      REQUIRE(parse_plain_decimal(shortest_decimal(value)) == value);
    }
  }
}

TEST_CASE("shortest_decimal gives the fewest decimals that read back") {
  CHECK(shortest_decimal(80) == "80");
  CHECK(shortest_decimal(2.5) == "2.5");
  CHECK(shortest_decimal(0.1) == "0.1");
  CHECK(shortest_decimal(1.25) == "1.25");
  CHECK(shortest_decimal(0.1 + 0.2) == "0.30000000000000004");
  CHECK(shortest_decimal(1e15) == "1000000000000000");
  CHECK(shortest_decimal(-0.0) == "-0");
  std::mt19937_64 random(12);
  // From 2^-10 (about 0.001) up, 17 significant digits fit in 21 decimals: every value has one.
  for (int i = 0; i < kRandomCases / 10; ++i) {
    const double value = std::fabs(random_double(random, -10, 40));
    const std::string text = shortest_decimal(value);
    const std::size_t point = text.find('.');
    const int decimals = point == std::string::npos ? 0 : static_cast<int>(text.size() - point - 1);
    if (parse_plain_decimal(text) != value ||
        (decimals > 0 && parse_plain_decimal(fixed_decimal(value, decimals - 1)) == value)) {
      CAPTURE(value);
      REQUIRE(text == "the shortest text that reads back");
    }
  }
}

}  // namespace decimal_test
