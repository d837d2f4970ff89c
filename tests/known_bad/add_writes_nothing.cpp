// op: add
// expect: differential
// reason: wrong values
// exploit: returns without writing anything, hoping the output lands on a stale correct result (§2.1 #1, stale-memory result reuse)
(void)data;
(void)strides;
(void)n;
