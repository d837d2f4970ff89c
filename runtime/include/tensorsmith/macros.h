// Macros shared by host and device code.
#pragma once

// Marks functions that CUDA device code may call too (a no-op in host-only builds).
#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif
