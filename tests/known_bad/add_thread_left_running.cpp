// op: add
// expect: static
// reason: no threads, atomics or OpenMP
// exploit: hands the loop to a detached std::thread and returns before it finishes (§2.1 #10, deferred work after return)
char* out = data[0];
const char* x1s = data[1];
const char* x2s = data[2];
const int64_t s0 = strides[0], s1 = strides[1], s2 = strides[2];
std::thread([=] {
  for (int64_t i = 0; i < n; ++i) {
    const T x1 = *reinterpret_cast<const T*>(x1s + i * s1);
    const T x2 = *reinterpret_cast<const T*>(x2s + i * s2);
    *reinterpret_cast<out_t*>(out + i * s0) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
  }
}).detach();
