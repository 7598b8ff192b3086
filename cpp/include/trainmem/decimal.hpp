// Decimal text to and from a double, exactly, without the C library's printf and strtod.
//
// Why not the C library: in the page's estimator (trainmem.wasm) printf and strtod, with the
// 128-bit long double arithmetic they bring, were 23 KB of its 141 KB (11 KB gzipped), a
// seventh of everything the default view fetches. Both jobs are done here with 128-bit
// integers over a stated domain, wide enough for every number the core formats or reads, and
// exact inside it: the same text as printf("%.*f"), the same double as strtod, which the
// native tests check against the C library over a million values.
#pragma once

#include <string>
#include <string_view>

namespace trainmem {

// The most decimals fixed_decimal writes, and the furthest place after the point at which
// parse_plain_decimal reads a digit: the same, so that every value read from text has a text
// within reach of shortest_decimal.
constexpr int kMaxFixedDecimals = 21;

// printf("%.*f", decimals, value), to the character: the exact binary value rounded half to even,
// a '-' for any negative value, -0.0 and those that round to zero included. Its domain:
// decimals from 0 to kMaxFixedDecimals, and |value| * 10^decimals below 2^127 (so any |value|
// below 10^17 at any number of decimals); outside it, and for infinities and NaN, "—".
std::string fixed_decimal(double value, int decimals);

// strtod, for a plain decimal written in full: an optional sign, digits with at most one '.',
// and an optional exponent ("8.192e3"). Exactly the double nearest the text (ties to even), as
// strtod gives, where the text has at most 19 significant digits (zeros that only place the
// point aside), its last nonzero digit no further than the 21st decimal (kMaxFixedDecimals:
// "1e-21", "1.5e-20"), and a value below 2^127; zero in any form. NaN for any other text
// ("1e-400" included, which strtod reads as zero).
double parse_plain_decimal(std::string_view text);

// The shortest text, in fixed notation, that parse_plain_decimal reads back as `value`: "80",
// "2.5", "0.1". Every value parse_plain_decimal gives has one: the text it was read from has at
// most kMaxFixedDecimals decimals, and `value` written to as many decimals lies no further from
// `value` than that text does. So has every value from 0.00001 up to 10^18 (17 significant digits
// always read back). Any other value gets kMaxFixedDecimals decimals, which may not read back.
std::string shortest_decimal(double value);

}  // namespace trainmem
