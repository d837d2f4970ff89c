// Hooks for the acceptance gate (validators/). They change how the runtime
// behaves for everything allocated or run afterwards; normal code never calls
// them. Each is there so that a gate run cannot be told from production by a
// kernel, or so that a memory error a production run might survive is certain
// to show in a gate run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace ts::testing {

// Fill every CPU block the runtime allocates from now on with bytes drawn from
// a stream keyed by `seed` (each block gets its own stretch of it), or leave new
// memory as the allocator hands it out (nullopt, the default, as in production).
// The gate draws a fresh seed for each run, so an output element the kernel never
// wrote differs between two runs, and no fixed canary exists to be recognised.
// CUDA blocks are filled with the seed's low byte.
void set_allocation_fill(std::optional<uint64_t> seed);

// Where new CPU blocks come from. Production allocates Pooled.
enum class Placement : int {
  Pooled = 0,       // the production allocator: 64-byte aligned, rounded up, large blocks cached
  Exact = 1,        // exactly the bytes asked for, from malloc: a sanitizer's redzone starts right after them
  GuardAfter = 2,   // the block ends where a no-access page begins: one byte past it faults
  GuardBefore = 3,  // the block starts where a no-access page ends: one byte before it faults
};
void set_allocation_placement(Placement placement);

// Memory for the gate's own buffers (inputs), placed next to a no-access page as
// GuardAfter / GuardBefore place blocks; released with guarded_release.
void* guarded_allocate(size_t nbytes, bool guard_before);
void guarded_release(void* p);

// Wipes the dead part of the stack of every thread that runs kernels: the
// caller's now, each engine worker's before it next takes part in an op. The
// bytes just below the frame are overwritten from `seed`, the resident pages
// below them are given back to the kernel (they read as zeros when touched
// again). Nothing a kernel left below its frame survives into the next call,
// and a read of dead stack differs between runs.
void scrub_stacks(uint64_t seed);

namespace detail {  // the allocator's side of the hooks above
Placement placement();
void* placed_allocate(size_t nbytes, Placement placement);
bool placed_release(void* p);  // true when p came from placed_allocate (and is now freed)
void fill(void* p, size_t nbytes);  // with the current fill stream, if one is set
bool filling();
int cuda_fill_byte();  // the fill for CUDA blocks, -1 for none
uint64_t scrub_epoch();  // changes with every scrub_stacks call
// A worker's check before it runs its part of an op: wipes its own dead stack when scrub_stacks was called
// since `seen` (which it then updates).
void scrub_if_asked(uint64_t& seen);
}  // namespace detail

}  // namespace ts::testing
