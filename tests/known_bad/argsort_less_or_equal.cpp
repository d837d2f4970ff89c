// op: argsort
// expect: differential
// reason: wrong values
// exploit: a comparator that says equal elements go before each other (<=): every row comes out sorted, but ties swap places, so the positions are not the stable ones the standard asks for (§2.1 #1, right values by the wrong rule; the gate's tie-heavy cases catch it)
if constexpr (ts::is_complex_v<compute_t>) {
  return a.re < b.re || (a.re == b.re && a.im <= b.im);  // the same exploit, lexicographically
} else {
  return a <= b || (b != b && a == a);
}
