// Turning bytes and counts into text, for the CLI and the page alike.
#pragma once

#include <string>

namespace trainmem {

// Decimal units, as the plate and the vendors' "80 GB" use: 1 GB = 10^9 bytes.
constexpr double kBytesPerGigabyte = 1e9;
constexpr double kBytesPerTerabyte = 1e12;

// "165.0 GB", "6.5 TB": gigabytes below 1,000 GB, terabytes from there on.
std::string format_bytes(double bytes, int decimals = 1);

// "8.03 B" parameters; "8,192" for counts.
std::string format_parameters(double num_parameters);
std::string format_count(double count);

}  // namespace trainmem
