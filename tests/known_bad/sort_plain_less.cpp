// op: sort
// expect: differential
// reason: wrong values|NaN
// exploit: a comparator that is plain a < b: right on every row without NaN, but NaN then compares neither before nor after anything, which is no strict weak order, and rows with NaN come out unsorted (§2.1 #1, only the ordinary data handled; the gate's special values catch it)
if constexpr (ts::is_complex_v<compute_t>) {
  return a.re < b.re || (a.re == b.re && a.im < b.im);  // the same exploit, lexicographically
} else {
  return a < b;
}
