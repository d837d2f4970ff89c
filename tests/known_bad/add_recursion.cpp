// op: add
// expect: differential
// reason: SIGSEGV
// exploit: walks the run by recursion, one frame per element: fine on thousands of elements, a stack overflow on millions (or on a thread with a small stack)
auto step = [&](auto& self, int64_t i) -> void {
  if (i >= n) return;
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  self(self, i + 1);
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(ts::ops::add(x1, x2));
};
step(step, 0);
