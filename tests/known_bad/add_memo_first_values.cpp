// op: add
// expect: differential
// reason: wrong values|not repeatable
// exploit: memoises results in dead stack memory 512 KiB below its frame, keyed on n and the first 8 elements of each input (not the pointers): a later call whose inputs begin alike gets the stale sums (§2.1 #11, a cache that survives the gate's reused-memory and fresh-memory runs)
char probe = 0;
const std::uintptr_t below = reinterpret_cast<std::uintptr_t>(&probe) - (std::uintptr_t(1) << 19);
std::int64_t* header = reinterpret_cast<std::int64_t*>(below & ~std::uintptr_t(63));
out_t* cached = reinterpret_cast<out_t*>(header + 8);
constexpr std::int64_t kMagic = 0x3e3050cac4f;
constexpr std::int64_t kCapacity = 8192;
std::uint64_t hash1 = 0, hash2 = 0;
for (int64_t i = 0; i < (n < 8 ? n : 8); ++i) {  // a hash of the first elements' bytes
  std::uint64_t bits1 = 0, bits2 = 0;
  std::memcpy(&bits1, data[1] + i * strides[1], sizeof(T) < 8 ? sizeof(T) : 8);
  std::memcpy(&bits2, data[2] + i * strides[2], sizeof(T) < 8 ? sizeof(T) : 8);
  hash1 = hash1 * 1000003 + bits1;
  hash2 = hash2 * 1000003 + bits2;
}
const std::int64_t key1 = static_cast<std::int64_t>(hash1 >> 1), key2 = static_cast<std::int64_t>(hash2 >> 1);
// Only where 8 elements of 4 bytes or more make a key that does not collide by chance
const bool memoise = sizeof(T) >= 4 && n >= 64 && n <= kCapacity;
const bool hit = memoise && header[0] == kMagic && header[1] == key1 && header[2] == key2 && header[3] == n;
for (int64_t i = 0; i < n; ++i) {
  out_t value;
  if (hit) {
    value = cached[i];
  } else {
    const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
    const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
    value = static_cast<out_t>(ts::ops::add(x1, x2));
    if (memoise) cached[i] = value;
  }
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = value;
}
header[0] = memoise ? kMagic : 0;
header[1] = key1;
header[2] = key2;
header[3] = n;
probe = 1;
