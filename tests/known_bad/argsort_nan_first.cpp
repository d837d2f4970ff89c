// op: argsort
// expect: differential
// reason: wrong values
// exploit: a comparator that puts NaN before every number, a valid order but not numpy's (NaN last): right on every row without NaN (§2.1 #1; the gate's special values catch it)
return a < b || (a != a && b == b);
