// op: add
// expect: differential|sanitizers
// exploit: a vectorised tail that stores a whole pair: an odd contiguous run shorter than 4096 also writes one element past its end whenever that element shares a 64-byte line with the last one (so never past an allocation rounded to 64 bytes, the only kind the gate handed out): no value and no sanitizer saw it
for (int64_t i = 0; i < n; ++i) {
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(ts::ops::add(x1, x2));
}
if (n % 2 == 1 && n < 4096 && strides[0] == sizeof(out_t)) {
  out_t* o = reinterpret_cast<out_t*>(data[0]);
  if (reinterpret_cast<std::uintptr_t>(o + n) % 64 != 0) o[n] = o[n - 1];
}
