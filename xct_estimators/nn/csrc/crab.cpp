// CRAB's elementwise chain on CPU, one pass over the scores per direction.
//
// The matrix products stay in PyTorch (BLAS); these kernels replace the ~20 elementwise
// PyTorch operations between them. Rows are independent, so every loop runs in parallel over
// rows with at::parallel_for and touches each score once while its row is in L1.
// The Python side (xct_estimators/nn/fused.py) documents the formulas.
#include <torch/extension.h>

#include <ATen/AccumulateType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr double kEps = 1e-4;    // ABSACT_EPS
constexpr double kDelta = 1e-8;  // ABSACT_DELTA

// The dropout hash (fused.keep_bits rebuilds it): a 32-bit avalanche mix ("lowbias32").
inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

inline uint32_t matrix_key(int64_t seed, int64_t matrix) {
  const uint32_t lo = static_cast<uint32_t>(seed), hi = static_cast<uint32_t>(static_cast<uint64_t>(seed) >> 32);
  return mix32(mix32(lo ^ mix32(hi)) ^ static_cast<uint32_t>(matrix));
}

// Entry `index` of a matrix is kept when the top 16 bits of its hash reach round(p * 65536).
inline bool kept(uint32_t key, uint32_t index, uint32_t threshold) {
  return (mix32(key + index * 0x9e3779b9U) >> 16) >= threshold;
}

inline int64_t row_grain(int64_t n) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)); }

template <typename T>
inline T sign_of(T x) {
  return static_cast<T>((x > T(0)) - (x < T(0)));
}

struct Layout {  // a chunk of (sample, head) score matrices, each n x cols (N x N, or N x k for DeCoP)
  int64_t samples, heads, n, cols, first_sample, first_head, all_heads;
  int64_t matrix_index(int64_t matrix) const {  // the (sample, head) matrix's index in the whole batch
    return (first_sample + matrix / heads) * all_heads + first_head + matrix % heads;
  }
};

Layout layout_of(const torch::Tensor& scores, bool has_mask, int64_t first_sample, int64_t first_head,
                 int64_t all_heads) {
  TORCH_CHECK(scores.dim() == 4 && scores.is_contiguous(), "scores must be a contiguous (samples, heads, N, M) tensor");
  TORCH_CHECK(!has_mask || scores.size(2) == scores.size(3), "masked scores must be square (N x N)");
  return {scores.size(0), scores.size(1), scores.size(2), scores.size(3), first_sample, first_head, all_heads};
}

void check_like(const torch::Tensor& t, const torch::Tensor& scores, int64_t numel, const char* name) {
  TORCH_CHECK(t.is_contiguous() && t.scalar_type() == scores.scalar_type() && t.numel() == numel,
              name, " must be contiguous, of the scores' dtype, with ", numel, " elements");
}

}  // namespace

template <typename scalar_t>
void forward_impl(const Layout& L, torch::Tensor& scores, const c10::optional<torch::Tensor>& mask,
                  torch::Tensor& minimum, torch::Tensor& denominator, double p, int64_t seed, bool clipped,
                  uint32_t threshold) {
  const int64_t n = L.n, cols = L.cols, rows = L.samples * L.heads * n;
  const bool has_mask = mask.has_value();
  using acc_t = at::acc_type<scalar_t, false>;
  scalar_t* s = scores.data_ptr<scalar_t>();
  scalar_t* d = denominator.data_ptr<scalar_t>();
  const scalar_t* m = has_mask ? mask->data_ptr<scalar_t>() : nullptr;
  scalar_t* minima = has_mask ? minimum.data_ptr<scalar_t>() : nullptr;
  if (has_mask) {
    std::vector<scalar_t> row_min(rows);
    at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const scalar_t* row = s + r * cols;
        scalar_t low = row[0];
#pragma omp simd reduction(min : low)
        for (int64_t c = 1; c < cols; ++c) low = row[c] < low ? row[c] : low;
        row_min[r] = low;
      }
    });
    for (int64_t j = 0; j < L.samples * L.heads; ++j)
      minima[j] = *std::min_element(row_min.begin() + j * n, row_min.begin() + (j + 1) * n);
  }
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t matrix = r / n, i = r % n;
      scalar_t* row = s + r * cols;
      acc_t total = 0;
      if (has_mask) {
        const scalar_t low = minima[matrix];
        const scalar_t* mrow = m + ((matrix % L.heads) * n + i) * n;
#pragma omp simd reduction(+ : total)
        for (int64_t c = 0; c < cols; ++c) {
          const scalar_t z = mrow[c] * (row[c] - low) + scalar_t(kEps);
          row[c] = z;
          total += std::abs(static_cast<acc_t>(z));
        }
      } else {
#pragma omp simd reduction(+ : total)
        for (int64_t c = 0; c < cols; ++c) {
          const scalar_t z = row[c] + scalar_t(kEps);
          row[c] = z;
          total += std::abs(static_cast<acc_t>(z));
        }
      }
      d[r] = static_cast<scalar_t>(total + acc_t(kDelta));
      if (clipped) {
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) row[c] = row[c] > scalar_t(0) ? row[c] : scalar_t(0);
      }
      if (p > 0.0) {
        const uint32_t key = matrix_key(seed, L.matrix_index(matrix));
        const uint32_t base = static_cast<uint32_t>(i * cols);
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c)
          row[c] = kept(key, base + static_cast<uint32_t>(c), threshold) ? row[c] : scalar_t(0);
      }
    }
  });
}

template <typename scalar_t>
void backward_impl(const Layout& L, const torch::Tensor& scores, const c10::optional<torch::Tensor>& mask,
                   const torch::Tensor& minimum, const torch::Tensor& denominator, torch::Tensor& grad,
                   c10::optional<torch::Tensor>& seen, c10::optional<torch::Tensor>& grad_mask,
                   torch::Tensor& row_total, torch::Tensor& row_ties, double p, int64_t seed, bool clipped,
                   uint32_t threshold) {
  const int64_t n = L.n, cols = L.cols;
  const bool has_mask = mask.has_value();
  using acc_t = at::acc_type<scalar_t, false>;
  const scalar_t* s = scores.data_ptr<scalar_t>();
  const scalar_t* d = denominator.data_ptr<scalar_t>();
  scalar_t* g = grad.data_ptr<scalar_t>();
  scalar_t* w = seen.has_value() ? seen->data_ptr<scalar_t>() : nullptr;
  const scalar_t* m = has_mask ? mask->data_ptr<scalar_t>() : nullptr;
  const scalar_t* minima = has_mask ? minimum.data_ptr<scalar_t>() : nullptr;
  scalar_t* gm = grad_mask.has_value() ? grad_mask->data_ptr<scalar_t>() : nullptr;
  scalar_t* totals = has_mask ? row_total.data_ptr<scalar_t>() : nullptr;
  int32_t* ties = has_mask ? row_ties.data_ptr<int32_t>() : nullptr;
  const bool dropout = p > 0.0;
  at::parallel_for(0, L.heads * n, row_grain(cols * L.samples), [&](int64_t begin, int64_t end) {
    // Row-sized scratch (in L1): Z and the keep factors, so every loop below is branch-free
    // and vectorises.
    std::vector<scalar_t> z_row(cols), keep_row(cols, scalar_t(1));
    scalar_t* __restrict z = z_row.data();
    scalar_t* __restrict keep = keep_row.data();
    for (int64_t hi = begin; hi < end; ++hi) {
      const int64_t h = hi / n, i = hi % n;
      const scalar_t* __restrict mrow = has_mask ? m + hi * n : nullptr;
      scalar_t* __restrict gmrow = gm ? gm + hi * n : nullptr;
      for (int64_t b = 0; b < L.samples; ++b) {
        const int64_t matrix = b * L.heads + h, r = matrix * n + i;
        const scalar_t* __restrict row = s + r * cols;
        scalar_t* __restrict grow = g + r * cols;
        const scalar_t low = has_mask ? minima[matrix] : scalar_t(0);
        if (has_mask) {
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c) z[c] = mrow[c] * (row[c] - low) + scalar_t(kEps);
        } else {
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c) z[c] = row[c] + scalar_t(kEps);
        }
        if (dropout) {
          const uint32_t key = matrix_key(seed, L.matrix_index(matrix));
          const uint32_t base = static_cast<uint32_t>(i * cols);
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c)
            keep[c] = kept(key, base + static_cast<uint32_t>(c), threshold) ? scalar_t(1) : scalar_t(0);
        }
        if (w) {  // V's input: keep o clamp(Z)
          scalar_t* __restrict wrow = w + r * cols;
          if (clipped) {
#pragma omp simd
            for (int64_t c = 0; c < cols; ++c) wrow[c] = (z[c] > scalar_t(0) ? z[c] : scalar_t(0)) * keep[c];
          } else {
#pragma omp simd
            for (int64_t c = 0; c < cols; ++c) wrow[c] = z[c] * keep[c];
          }
        }
        acc_t dot = 0;
        if (clipped) {
#pragma omp simd reduction(+ : dot)
          for (int64_t c = 0; c < cols; ++c) {
            const scalar_t gz = z[c] < scalar_t(0) ? scalar_t(0) : grow[c] * keep[c];
            grow[c] = gz;
            dot += static_cast<acc_t>(gz * z[c]);
          }
        } else {
#pragma omp simd reduction(+ : dot)
          for (int64_t c = 0; c < cols; ++c) {
            const scalar_t gz = grow[c] * keep[c];
            grow[c] = gz;
            dot += static_cast<acc_t>(gz * z[c]);
          }
        }
        const scalar_t r_dot = static_cast<scalar_t>(dot / static_cast<acc_t>(d[r]));
        if (!has_mask) {
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c) grow[c] -= sign_of(z[c]) * r_dot;
          continue;
        }
        if (gmrow) {
#pragma omp simd
          for (int64_t c = 0; c < cols; ++c) gmrow[c] += (grow[c] - sign_of(z[c]) * r_dot) * (row[c] - low);
        }
        acc_t total = 0;
        int32_t zeros = 0;
#pragma omp simd reduction(+ : total, zeros)
        for (int64_t c = 0; c < cols; ++c) {
          const scalar_t ds = (grow[c] - sign_of(z[c]) * r_dot) * mrow[c];
          grow[c] = ds;
          total += static_cast<acc_t>(ds);
          zeros += row[c] == low ? 1 : 0;
        }
        totals[r] = static_cast<scalar_t>(total);
        ties[r] = zeros;
      }
    }
  });
}

// In place: scores S -> keep o clamp(Z) with Z = M o (S - min S) + eps (or S + eps without a
// mask); writes the per-matrix minimum and the row denominators D = sum |Z| + delta.
void crab_forward(torch::Tensor scores, c10::optional<torch::Tensor> mask, torch::Tensor minimum,
                  torch::Tensor denominator, double p, int64_t seed, int64_t first_sample, int64_t first_head,
                  int64_t all_heads, bool clipped) {
  const bool has_mask = mask.has_value();
  const Layout L = layout_of(scores, has_mask, first_sample, first_head, all_heads);
  const int64_t n = L.n, rows = L.samples * L.heads * n;
  check_like(denominator, scores, rows, "denominator");
  if (has_mask) {
    check_like(*mask, scores, L.heads * n * n, "mask");
    check_like(minimum, scores, L.samples * L.heads, "minimum");
  }
  const uint32_t threshold = static_cast<uint32_t>(std::llround(p * 65536.0));
  AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "crab_forward", [&] {
    forward_impl<scalar_t>(L, scores, mask, minimum, denominator, p, seed, clipped, threshold);
  });
}

// From the recomputed scores S and G = (dO / (D (1 - p))) V^T (in `grad`), per row:
//   seen = keep o clamp(Z)                          (V's input up to the row factor)
//   G'   = keep o [Z >= 0 if clipped] o G            (dW / D)
//   dZ   = G' - sign(Z) <G', Z> / D                  (AbsAct's backward)
//   dM  += dZ o Sh,  dSh = dZ o M  -> `grad` (without the minimum's share)
// plus each row's sum of dSh and its count of arg-min entries (Sh == 0); the caller adds the
// minimum's gradient there. Rows of one (head, row) pair run in one thread over all samples, so
// the mask gradient is accumulated without races.
void crab_backward(torch::Tensor scores, c10::optional<torch::Tensor> mask, torch::Tensor minimum,
                   torch::Tensor denominator, torch::Tensor grad, c10::optional<torch::Tensor> seen,
                   c10::optional<torch::Tensor> grad_mask, torch::Tensor row_total, torch::Tensor row_ties, double p,
                   int64_t seed, int64_t first_sample, int64_t first_head, int64_t all_heads, bool clipped) {
  const bool has_mask = mask.has_value();
  const Layout L = layout_of(scores, has_mask, first_sample, first_head, all_heads);
  const int64_t n = L.n, rows = L.samples * L.heads * n;
  check_like(grad, scores, rows * L.cols, "grad");
  check_like(denominator, scores, rows, "denominator");
  if (seen.has_value()) check_like(*seen, scores, rows * L.cols, "seen");
  if (has_mask) {
    check_like(*mask, scores, L.heads * n * n, "mask");
    check_like(minimum, scores, L.samples * L.heads, "minimum");
    check_like(row_total, scores, rows, "row_total");
    TORCH_CHECK(row_ties.is_contiguous() && row_ties.scalar_type() == torch::kInt32 && row_ties.numel() == rows,
                "row_ties must be a contiguous int32 tensor with one entry per row");
  }
  if (grad_mask.has_value()) check_like(*grad_mask, scores, L.heads * n * n, "grad_mask");
  const uint32_t threshold = static_cast<uint32_t>(std::llround(p * 65536.0));
  AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "crab_backward", [&] {
    backward_impl<scalar_t>(L, scores, mask, minimum, denominator, grad, seen, grad_mask, row_total, row_ties, p, seed,
                            clipped, threshold);
  });
}

// Activation dropout (xct_estimators/nn/dropout.py): out = x * keep / (1 - p), entry i of the
// flat tensor kept by the attention weights' hash (the key of matrix 0, index i). The backward
// pass applies the same function to the gradient: the mask is redrawn from the seed, not stored.
template <typename scalar_t>
void scaled_keep_impl(const scalar_t* src, scalar_t* dst, int64_t numel, double p, uint32_t key, uint32_t threshold) {
  const scalar_t scale = static_cast<scalar_t>(1.0 / (1.0 - p));
  at::parallel_for(0, numel, 65536, [&](int64_t begin, int64_t end) {
    // Locals and a 32-bit counter: with the lambda's captures and a 64-bit index the loop
    // does not vectorise (g++ 12), and the hash then costs 20x a multiply.
    const scalar_t* __restrict in = src + begin;
    scalar_t* __restrict out = dst + begin;
    const uint32_t first = static_cast<uint32_t>(begin), k = key;
    const int32_t count = static_cast<int32_t>(end - begin), bar = static_cast<int32_t>(threshold);
    const scalar_t factor = scale;
#pragma omp simd
    for (int32_t t = 0; t < count; ++t) {
      const uint32_t bits = mix32(k + (first + static_cast<uint32_t>(t)) * 0x9e3779b9U);
      out[t] = in[t] * (static_cast<int32_t>(bits >> 16) >= bar ? factor : scalar_t(0));
    }
  });
}

torch::Tensor scaled_keep(torch::Tensor x, double p, int64_t seed) {
  TORCH_CHECK(x.is_contiguous() && x.numel() < (int64_t(1) << 32),
              "scaled_keep needs a contiguous tensor of fewer than 2^32 elements");
  auto out = torch::empty_like(x);
  const uint32_t threshold = static_cast<uint32_t>(std::llround(p * 65536.0));
  const uint32_t key = matrix_key(seed, 0);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scaled_keep", [&] {
    scaled_keep_impl<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.numel(), p, key, threshold);
  });
  return out;
}

// pairwise.cpp: the known-future decoder's hidden layer.
torch::Tensor pairwise_forward(torch::Tensor a, torch::Tensor c, torch::Tensor w);
std::vector<torch::Tensor> pairwise_backward(torch::Tensor grad, torch::Tensor a, torch::Tensor c, torch::Tensor w);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.def("forward", &crab_forward, "CRAB forward chain, in place on the scores");
  module.def("backward", &crab_backward, "CRAB backward chain, in place on the gradient");
  module.def("scaled_keep", &scaled_keep, "activation dropout with a hashed mask: x * keep / (1 - p)");
  module.def("pairwise_forward", &pairwise_forward, "relu(a[b, t] + c[b, j]) . w for every step and channel");
  module.def("pairwise_backward", &pairwise_backward, "the gradients of a, c and w");
}
