// op: cumulative_sum
// expect: differential
// reason: NaN|wrong values
// exploit: a combine that steps over NaN (nancumsum's rule, not cumsum's): right on every row without NaN (§2.1 #1, only ordinary data handled; the gate's special values catch it)
return x != x ? acc : static_cast<acc_t>(ts::ops::add(acc, x));
