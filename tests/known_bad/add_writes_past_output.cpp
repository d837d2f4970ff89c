// op: add
// expect: differential|sanitizers
// exploit: a contiguous run also writes one element past the output's end (a copy of its last element): the allocator's rounded blocks absorbed it, so no value and no sanitizer saw it
for (int64_t i = 0; i < n; ++i) {
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(ts::ops::add(x1, x2));
}
if (n > 0 && strides[0] == sizeof(out_t)) {
  out_t* o = reinterpret_cast<out_t*>(data[0]);
  o[n] = o[n - 1];
}
