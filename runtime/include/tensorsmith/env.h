// Integer settings read from the environment (TS_NUM_THREADS, TS_SPIN_MS, TS_STREAM_MIN_BYTES).
#pragma once

#include <cstdint>
#include <optional>

namespace ts {

// The value of environment variable `name`, or nullopt when it is unset. A set value must be a
// whole decimal integer (an optional sign and digits, nothing else) within [min, max]; anything
// else (empty, "4x", " 4", a number strtoll saturates) throws ValueError
// "<name> must be <what>, got '<value>' (<why>)".
std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max, const char* what);

}  // namespace ts
