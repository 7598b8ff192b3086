#include "trainmem/format.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace trainmem;

namespace format_test {

TEST_CASE("bytes are shown in decimal gigabytes below 1,000 GB and terabytes above") {
  CHECK(format_bytes(164991401984.0) == "165.0 GB");
  CHECK(format_bytes(80e9) == "80.0 GB");
  CHECK(format_bytes(80e9, 0) == "80 GB");
  CHECK(format_bytes(6.4936542208e12) == "6.5 TB");
  CHECK(format_bytes(0) == "0.0 GB");
}

TEST_CASE("a change in bytes is said as more or less, never as a negative amount") {
  CHECK(format_change(165e9, 52.6e9) == "112.4 GB less");
  CHECK(format_change(9.7e9, 21.2e9) == "11.5 GB more");
  CHECK(format_change(1e9, 1.04e9) == "the same");  // rounds to 0.0 GB
  CHECK(format_change(6.5e12, 8.7e12) == "2.2 TB more");
}

TEST_CASE("a value that would round to 1000.0 GB is shown in terabytes") {
  CHECK(format_bytes(999.97e9) == "1.0 TB");
  CHECK(format_bytes(999.94e9) == "999.9 GB");
}

TEST_CASE("formatting never prints nan or inf") {
  CHECK(format_bytes(std::numeric_limits<double>::quiet_NaN()) == "—");
  CHECK(format_bytes(std::numeric_limits<double>::infinity()) == "—");
  CHECK(format_count(std::numeric_limits<double>::infinity()) == "—");
  CHECK(format_parameters(std::numeric_limits<double>::quiet_NaN()) == "—");
}

TEST_CASE("counts are grouped by thousands and parameters shown in billions") {
  CHECK(format_count(8192) == "8,192");
  CHECK(format_count(131072) == "131,072");
  CHECK(format_count(999) == "999");
  CHECK(format_count(1000000) == "1,000,000");
  CHECK(format_count(-4096) == "-4,096");
  CHECK(format_parameters(8030261248.0) == "8.03 B");
  CHECK(format_parameters(405853388800.0) == "405.85 B");
  CHECK(format_parameters(124e6) == "124.0 M");
}

TEST_CASE("typed numbers are read strictly: whole text, in range, or refused") {
  CHECK(parse_whole_number("8") == 8);
  CHECK(parse_whole_number("65536") == 65536);
  CHECK(parse_whole_number("-3") == -3);
  for (const char* text : {"", "abc", "8x", " 8", "8 ", "2.5", "1e3", "99999999999", "0x10"}) {
    CAPTURE(text);
    CHECK(parse_whole_number(text) == kNotAWholeNumber);
  }
  CHECK(parse_decimal("40") == 40);
  CHECK(parse_decimal("40.5") == 40.5);
  CHECK(parse_decimal("1e3") == 1000);
  for (const char* text : {"", "abc", "40GB", "1e999", "nan", "inf", " 40"}) {
    CAPTURE(text);
    CHECK(std::isnan(parse_decimal(text)));
  }
}

TEST_CASE("decimal text is read without spaces, infinities or hexadecimal") {
  CHECK(parse_decimal("-2.5") == -2.5);
  CHECK(parse_decimal(".5") == 0.5);
  for (const char* text : {"0x10", "infinity", "-inf", "1e3 ", "+", "-", "."}) {
    CAPTURE(text);
    CHECK(std::isnan(parse_decimal(text)));
  }
}

TEST_CASE("chart ticks carry only the decimals they need") {
  CHECK(format_bytes_short(80e9) == "80 GB");
  CHECK(format_bytes_short(3.5e12) == "3.5 TB");
  CHECK(format_bytes_short(1.25e12) == "1.25 TB");
  CHECK(format_bytes_short(500e9) == "500 GB");
  CHECK(format_bytes_short(0) == "0 GB");
  CHECK(format_bytes_short(std::numeric_limits<double>::quiet_NaN()) == "—");
}

TEST_CASE("a share of a device is a whole percentage") {
  CHECK(format_share(0.657) == "66%");
  CHECK(format_share(117.02) == "11702%");
  CHECK(format_share(std::numeric_limits<double>::infinity()) == "—");
}

TEST_CASE("formatting refuses what it cannot print truthfully") {
  CHECK(format_bytes(165e9, -5) == "165 GB");
  CHECK(format_bytes(165e9, 400) == "165.000 GB");
  CHECK(format_count(1e300) == "—");
  CHECK(format_bytes(1e300) == "—");
  // Past the exact decimals' domain (decimal.hpp) a dash, with no unit after it.
  CHECK(format_share(1e40) == "—");
  CHECK(format_percent(1e40) == "—");
  CHECK(format_parameters(1e50) == "—");
  CHECK(format_worth(1e40) == "—");
}

TEST_CASE("devices' worth has one decimal, and the digits that say which side of one device") {
  CHECK(format_worth(2.0624) == "2.1");
  CHECK(format_worth(88.2) == "88.2");
  CHECK(format_worth(82.5 / 80) == "1.03");
  CHECK(format_worth(77.6 / 80) == "0.97");
  CHECK(format_worth(80.04 / 80) == "1.001");
  CHECK(format_worth(1) == "1.0");
  CHECK(format_worth(0.5) == "0.5");
  // A small model is some share of a device, never "0.0" of one.
  CHECK(format_worth(2.3 / 80) == "0.03");
  CHECK(format_worth(0.0042) == "0.004");
  CHECK(format_worth(0.0001) == "< 0.001");
  CHECK(format_worth(0) == "0.0");
  CHECK(format_worth(std::nan("")) == "—");
}

TEST_CASE("numbers grouped by threes with commas, as the page writes them, are read") {
  CHECK(parse_whole_number("16,384") == 16384);
  CHECK(parse_whole_number("1,048,576") == 1048576);
  CHECK(parse_decimal("16,384") == 16384);
  CHECK(parse_decimal("1,000.5") == 1000.5);
  CHECK(parse_decimal("-2,500") == -2500);
  for (const char* text :
       {"1,6384", ",384", "16,38", "16,,384", "1,234,5678", "16384,", "1.5,000"}) {
    CAPTURE(text);
    CHECK(parse_whole_number(text) == kNotAWholeNumber);
    CHECK(std::isnan(parse_decimal(text)));
  }
}

}  // namespace format_test
