// op: _adamw_update
// expect: differential
// reason: wrong values
// exploit: steps the parameter with the moments as they were before this step (the order of the three updates reversed), a slip that still trains: every parameter moves, by the last step's direction
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
for (int64_t i = 0; i < args.n; ++i) {
  const acc_t old_m = static_cast<acc_t>(m[i]), old_v = static_cast<acc_t>(v[i]), grad = static_cast<acc_t>(g[i]);
  p[i] = static_cast<T>(static_cast<acc_t>(p[i]) * (1 - lr * weight_decay) -
                        lr / bias_correction1 * old_m / (ts::ops::sqrt(old_v) / bias_correction2_sqrt + eps));
  m[i] = static_cast<T>(old_m + (1 - beta1) * (grad - old_m));
  v[i] = static_cast<T>(beta2 * old_v + (1 - beta2) * grad * grad);
}
