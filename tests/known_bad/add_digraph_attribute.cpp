// op: add
// expect: static
// reason: digraphs
// exploit: spells an attribute with the <: :> digraphs, past the rule that admits only [[likely]] and its kind: GCC accepts any attribute there, one that changes code generation included
<:<:gnu::cold:>:> int64_t i = 0;
for (; i < n; ++i) {
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(ts::ops::add(x1, x2));
}
