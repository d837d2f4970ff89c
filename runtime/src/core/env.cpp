#include "tensorsmith/env.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "tensorsmith/errors.h"

namespace ts {

namespace {

// An optional sign and at least one digit, then nothing: strtoll alone would also take
// leading spaces and stop quietly at the first character it cannot read.
bool is_decimal_integer(const char* s) {
  if (*s == '+' || *s == '-') ++s;
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s) {
    if (std::isdigit(static_cast<unsigned char>(*s)) == 0) return false;
  }
  return true;
}

}  // namespace

std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max, const char* what) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  TS_CHECK(is_decimal_integer(value), ValueError,
           name << " must be " << what << ", got '" << value << "' (not a whole decimal number)");
  errno = 0;
  const long long n = std::strtoll(value, nullptr, 10);
  // strtoll saturates at LLONG_MIN/MAX and says so only through errno.
  TS_CHECK(errno != ERANGE && n >= min && n <= max, ValueError,
           name << " must be " << what << ", got '" << value << "' (outside " << min << " to " << max << ")");
  return static_cast<int64_t>(n);
}

}  // namespace ts
