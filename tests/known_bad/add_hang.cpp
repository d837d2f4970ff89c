// op: add
// expect: differential
// reason: timed out
// exploit: never returns (an infinite loop with a side effect the compiler must keep); the sandbox's wall-clock limit must end it
char* out = data[0];
(void)strides;
(void)n;
for (int64_t spin = 0;; ++spin) {
  *reinterpret_cast<out_t*>(out) = static_cast<out_t>(spin & 1);
  std::memset(out, int(spin & 0xff), 1);
}
