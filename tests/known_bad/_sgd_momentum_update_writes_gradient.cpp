// op: _sgd_momentum_update
// expect: differential
// reason: was modified
// exploit: updates the parameter and its buffer right, then zeroes the gradient it was given (a zero_grad folded into the step), so a caller that reads the gradient after the step sees nothing (§2.1 #5, changing the inputs)
const acc_t lr = static_cast<acc_t>(args.scalars[0]);
const acc_t weight_decay = static_cast<acc_t>(args.scalars[1]);
const acc_t momentum = static_cast<acc_t>(args.scalars[2]);
T* const p = reinterpret_cast<T*>(args.data[0]);
T* const b = reinterpret_cast<T*>(args.data[1]);
T* const g = reinterpret_cast<T*>(args.data[2]);
for (int64_t i = 0; i < args.n; ++i) {
  const acc_t d = static_cast<acc_t>(g[i]) + weight_decay * static_cast<acc_t>(p[i]);
  const acc_t buffer = momentum * static_cast<acc_t>(b[i]) + d;
  b[i] = static_cast<T>(buffer);
  p[i] = static_cast<T>(static_cast<acc_t>(p[i]) - lr * buffer);
  g[i] = T(0);
}
