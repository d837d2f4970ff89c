// op: add
// expect: differential
// reason: wrong values
// exploit: always takes the unit-stride fast path and ignores the strides it is given (wrong stride handling; §2.1 #6)
out_t* o = reinterpret_cast<out_t*>(data[0]);
const T* p_x1 = reinterpret_cast<const T*>(data[1]);
const T* p_x2 = reinterpret_cast<const T*>(data[2]);
(void)strides;
for (int64_t i = 0; i < n; ++i) {
  o[i] = static_cast<out_t>(ts::ops::add<compute_t>(p_x1[i], p_x2[i]));
}
