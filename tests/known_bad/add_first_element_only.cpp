// op: add
// expect: differential
// reason: wrong values
// exploit: computes only element 0 of each run and leaves the rest unwritten (§2.1 #2, partial work)
char* out = data[0];
if (n > 0) {
  const T x1 = *reinterpret_cast<const T*>(data[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2]);
  *reinterpret_cast<out_t*>(out) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
(void)strides;
