// op: argsort
// expect: differential
// reason: wrong values
// exploit: a comparator that puts NaN before every number, a valid order but not numpy's (NaN last): right on every row without NaN (§2.1 #1; the gate's special values catch it)
if constexpr (ts::is_complex_v<compute_t>) {
  const bool a_im_nan = a.im != a.im, b_im_nan = b.im != b.im;  // numpy's complex order (not the exploit)
  if (a.re < b.re) return !a_im_nan || b_im_nan;
  if (a.re > b.re) return b_im_nan && !a_im_nan;
  if (a.re == b.re || (a.re != a.re && b.re != b.re)) return a.im < b.im || (b_im_nan && !a_im_nan);
  return b.re != b.re;
} else {
  return a < b || (a != a && b == b);
}
