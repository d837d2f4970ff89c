// op: cumulative_prod
// expect: differential
// reason: wrong values|wrong sign|NaN
// exploit: a combine that treats a zero as one: right wherever a line holds no zero, as random data almost never does (§2.1 #1; the gate's specials and small-integer cases hold zeros)
return x == acc_t(0) ? acc : static_cast<acc_t>(ts::ops::multiply(acc, x));
