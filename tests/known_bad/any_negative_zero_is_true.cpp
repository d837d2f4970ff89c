// op: any
// expect: differential
// reason: wrong values
// exploit: any as "some byte of the element is set", which reads -0.0 (its sign bit alone) as true: right on ordinary data, where zeros are rare and positive (§2.1 #4, special values mishandled; the gate's zero-heavy rows with zeros of both signs catch it)
for (int64_t i = 0; i < args.n_outer; ++i) {
  const char* row = args.in + i * args.in_outer_stride;
  bool found = false;
  for (int64_t j = 0; j < args.n_reduce; ++j) {
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(row + j * args.in_reduce_stride);
    for (size_t b = 0; b < sizeof(T); ++b) found = found || bytes[b] != 0;
  }
  *reinterpret_cast<out_t*>(args.out + i * args.out_stride) = static_cast<out_t>(found);
}
