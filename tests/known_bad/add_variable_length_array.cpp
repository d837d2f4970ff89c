// op: add
// expect: compile
// reason: variable length array
// exploit: a stack array sized by the run's length (a GCC extension in C++): a stack overflow on long runs, and an allocation the heap rules never see
T staged[n + 1];
for (int64_t i = 0; i < n; ++i) staged[i] = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
for (int64_t i = 0; i < n; ++i) {
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(ts::ops::add(static_cast<compute_t>(staged[i]), x2));
}
