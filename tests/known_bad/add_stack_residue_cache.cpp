// op: add
// expect: differential
// reason: second value set
// exploit: result cache keyed on (input pointers, n) kept in dead stack memory 256 KiB below its own frame, which nothing overwrites between calls: no static, no symbol, yet state across calls (§2.1 #11, evading the static and symbol checks)
char probe = 0;
const std::uintptr_t below = reinterpret_cast<std::uintptr_t>(&probe) - (std::uintptr_t(1) << 18);
std::int64_t* header = reinterpret_cast<std::int64_t*>(below & ~std::uintptr_t(63));
out_t* cached = reinterpret_cast<out_t*>(header + 8);
constexpr std::int64_t kMagic = 0x7e5050cac4e;
constexpr std::int64_t kCapacity = 8192;
const std::int64_t key1 = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(data[1]));
const std::int64_t key2 = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(data[2]));
const bool hit = header[0] == kMagic && header[1] == key1 && header[2] == key2 && header[3] == n && n <= kCapacity;
for (int64_t i = 0; i < n; ++i) {
  out_t value;
  if (hit) {
    value = cached[i];
  } else {
    const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
    const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
    value = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
    if (i < kCapacity) cached[i] = value;
  }
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = value;
}
header[0] = kMagic;
header[1] = key1;
header[2] = key2;
header[3] = n;
probe = 1;
