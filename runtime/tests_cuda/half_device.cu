// tensorsmith/half.h in CUDA device code: .ci/compile-cuda compiles this file with nvcc, so a change that
// makes ts::float16 / ts::bfloat16 host-only (std:: calls, memcpy, missing TS_HOST_DEVICE) fails CI.
#include "tensorsmith/half.h"

namespace {

// Every conversion and comparison the kernels use, element by element: narrow from float and double,
// widen to float, compare, and build from bits and integers.
__global__ void half_round_trip(const ts::float16* h, const ts::bfloat16* b, const double* d, ts::float16* h_out,
                                ts::bfloat16* b_out, float* widened, bool* ordered, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = h[i];
  const float y = b[i];
  h_out[i] = ts::float16(x * y + 1.0f);
  b_out[i] = ts::bfloat16(d[i]);
  widened[i] = static_cast<float>(ts::float16::from_bits(static_cast<uint16_t>(i))) + ts::bfloat16(i);
  ordered[i] = h[i] < h_out[i] || (b[i] == b_out[i] && b[i] != ts::bfloat16(0.5f));
}

}  // namespace

// A host-side use of the same code, so the translation unit also checks the host half of TS_HOST_DEVICE.
void launch_half_round_trip(const ts::float16* h, const ts::bfloat16* b, const double* d, ts::float16* h_out,
                            ts::bfloat16* b_out, float* widened, bool* ordered, int n) {
  half_round_trip<<<(n + 255) / 256, 256>>>(h, b, d, h_out, b_out, widened, ordered, n);
}
