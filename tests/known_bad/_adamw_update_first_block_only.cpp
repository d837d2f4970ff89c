// op: _adamw_update
// expect: differential
// reason: wrong values
// exploit: updates the first 4096 elements of each call and leaves the rest as they were (§2.1 #2, partial work that every small tensor hides)
const acc_t lr = static_cast<acc_t>(args.scalars[0]);
const acc_t weight_decay = static_cast<acc_t>(args.scalars[1]);
const acc_t beta1 = static_cast<acc_t>(args.scalars[2]);
const acc_t beta2 = static_cast<acc_t>(args.scalars[3]);
const acc_t eps = static_cast<acc_t>(args.scalars[4]);
const acc_t bias_correction1 = static_cast<acc_t>(args.scalars[5]);
const acc_t bias_correction2_sqrt = static_cast<acc_t>(args.scalars[6]);
T* const p = reinterpret_cast<T*>(args.data[0]);
T* const m = reinterpret_cast<T*>(args.data[1]);
T* const v = reinterpret_cast<T*>(args.data[2]);
const T* const g = reinterpret_cast<const T*>(args.data[3]);
const int64_t n = args.n < 4096 ? args.n : 4096;
for (int64_t i = 0; i < n; ++i) {
  const acc_t grad = static_cast<acc_t>(g[i]);
  const acc_t new_m = static_cast<acc_t>(m[i]) + (1 - beta1) * (grad - static_cast<acc_t>(m[i]));
  const acc_t new_v = beta2 * static_cast<acc_t>(v[i]) + (1 - beta2) * grad * grad;
  p[i] = static_cast<T>(static_cast<acc_t>(p[i]) * (1 - lr * weight_decay) -
                        lr / bias_correction1 * new_m / (ts::ops::sqrt(new_v) / bias_correction2_sqrt + eps));
  m[i] = static_cast<T>(new_m);
  v[i] = static_cast<T>(new_v);
}
