// op: cumulative_sum
// expect: differential
// reason: wrong values
// exploit: a combine that keeps the running sum in float whatever the accumulator: float32 sums look right on short rows, but float64 results lose half their digits and long float32 rows drift (§2.1 #3, precision shortcut; the gate's float64 cases and long rows catch it)
if constexpr (ts::is_complex_v<acc_t>) {
  return acc_t(ts::complex64(acc) + ts::complex64(x));  // complex64 parts whatever the accumulator: the same shortcut
} else {
  return static_cast<acc_t>(static_cast<float>(acc) + static_cast<float>(x));
}
