// Hooks for the acceptance gate (validators/). They change how the runtime
// behaves for everything allocated afterwards; normal code never calls them.
#pragma once

#include <cstdint>
#include <optional>

namespace ts::testing {

// Fill every block the runtime allocates from now on with `byte` (nullopt:
// leave new memory uninitialised, the default). The gate runs each candidate
// twice with different fill bytes: an output element the kernel never wrote
// (or a result that depends on uninitialised output memory) then differs.
void set_allocation_fill(std::optional<uint8_t> byte);

}  // namespace ts::testing
