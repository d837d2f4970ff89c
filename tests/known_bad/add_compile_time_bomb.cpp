// op: add
// expect: compile
// reason: compile budget
// exploit: constant expressions that take the compiler minutes (each under its operation limit, evaluated once per dtype): a gate without a compile budget waits for them, and a build farm with it
constexpr auto spin = [](int64_t rounds) {
  int64_t s = 0;
  for (int64_t i = 0; i < 250000; ++i)
    for (int64_t j = 0; j < rounds; ++j) s += i ^ j;
  return s;
};
constexpr int64_t salt1 = spin(21) ^ spin(22) ^ spin(23) ^ spin(24);
constexpr int64_t salt2 = spin(25) ^ spin(26) ^ spin(27) ^ spin(28);
constexpr int64_t salt3 = spin(20) ^ spin(19) ^ spin(18) ^ spin(17);
for (int64_t i = 0; i < n; ++i) {
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) =
      static_cast<out_t>(ts::ops::add(x1, x2)) + static_cast<out_t>((salt1 ^ salt2 ^ salt3) & 0);
}
