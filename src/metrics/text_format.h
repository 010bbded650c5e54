#pragma once
// Pieces of the Prometheus text format 0.0.4: escaped label pairs and numbers.

#include <string>
#include <string_view>

namespace sluice::metrics {

// Appends `name="value"` with value's backslashes, double quotes and newlines escaped, and each
// byte that is not part of well-formed UTF-8 replaced by U+FFFD (a parse error otherwise).
void append_label(std::string& out, std::string_view name, std::string_view value);

// Appends x in the shortest decimal form that reads back exactly, never with an exponent;
// NaN becomes "NaN" and infinities "+Inf" / "-Inf", as the format spells them.
void append_double(std::string& out, double x);

}  // namespace sluice::metrics
