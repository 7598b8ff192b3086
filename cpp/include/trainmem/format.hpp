// Turning bytes and counts into text, for the CLI and the page alike.
#pragma once

#include <string>
#include <string_view>

namespace trainmem {

// Decimal units, as the plate and the vendors' "80 GB" use: 1 GB = 10^9 bytes.
constexpr double kBytesPerGigabyte = 1e9;
constexpr double kBytesPerTerabyte = 1e12;

// "165.0 GB", "6.5 TB": gigabytes below 1,000 GB, terabytes from there on; 0 to 3 decimals.
std::string format_bytes(double bytes, int decimals = 1);

// How `to_bytes` stands against `from_bytes`, in words: "11.5 GB more", "112.4 GB less", or "the
// same" where the difference rounds to nothing. Never a negative amount.
std::string format_change(double from_bytes, double to_bytes);

// For chart ticks: as few decimals as the value needs, at most two: "80 GB", "3.5 TB".
std::string format_bytes_short(double bytes);

// Devices' worth, the total over one device's memory, to one decimal as the plate gives it
// ("2.1"); near one device, with the digits that say which side of it the total is: "1.03",
// "0.97".
std::string format_worth(double devices_worth);

// A percentage as given, to at most two decimals: 10 -> "10%", 12.5 -> "12.5%".
std::string format_percent(double percent);

// A fraction of a device as a whole percentage: 0.657 -> "66%".
std::string format_share(double fraction);

// "8.03 B" parameters; "8,192" for counts.
std::string format_parameters(double num_parameters);
std::string format_count(double count);

// Text typed by a person, read the same way by the CLI and the page. A whole number that fits
// an int, else kNotAWholeNumber (which every range check refuses); a decimal number, exponent
// allowed ("8.192e3"), written in full with nothing around it, else NaN. Text outside
// parse_plain_decimal's exact domain (decimal.hpp: more than 19 significant digits, a last digit
// past the 21st decimal, "1e999") counts as not a number. Commas grouping the whole part by
// threes, as format_count writes it ("16,384"), are read too.
constexpr int kNotAWholeNumber = -1;
int parse_whole_number(std::string_view text);
double parse_decimal(std::string_view text);

}  // namespace trainmem
