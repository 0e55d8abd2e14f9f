// The known-future decoder's pairwise hidden layer on CPU: out[b, t, j] = relu(a[b, t] + c[b, j]) . w
// for every step t and channel j, without the (B, T, C, H) hidden tensor PyTorch would write and
// read about ten times per training step. The backward recomputes the hidden values row by row.
// The Python side (xct_estimators/nn/known_future.py, pairwise) documents the layer.
#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace {

struct Sizes {  // a (B, T, H), c (B, C, H), w (H)
  int64_t batch, steps, channels, hidden;
};

Sizes sizes_of(const torch::Tensor& a, const torch::Tensor& c, const torch::Tensor& w) {
  TORCH_CHECK(a.dim() == 3 && c.dim() == 3 && w.dim() == 1, "pairwise: a (B, T, H), c (B, C, H), w (H)");
  TORCH_CHECK(a.size(0) == c.size(0) && a.size(2) == c.size(2) && a.size(2) == w.size(0),
              "pairwise: a, c and w disagree on B or H");
  TORCH_CHECK(a.device().is_cpu() && c.device().is_cpu() && w.device().is_cpu(), "pairwise: a CPU kernel");
  TORCH_CHECK(a.is_contiguous() && c.is_contiguous() && w.is_contiguous(), "pairwise: inputs must be contiguous");
  TORCH_CHECK(a.scalar_type() == c.scalar_type() && a.scalar_type() == w.scalar_type(),
              "pairwise: inputs must share a dtype");
  return {a.size(0), a.size(1), c.size(1), a.size(2)};
}

template <typename scalar_t>
void forward_impl(const Sizes& S, const scalar_t* a, const scalar_t* c, const scalar_t* w, scalar_t* out) {
  const int64_t H = S.hidden, C = S.channels;
  at::parallel_for(0, S.batch * S.steps, std::max<int64_t>(1, 4096 / std::max<int64_t>(C * H, 1)),
                   [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const scalar_t* ar = a + row * H;
      const scalar_t* cb = c + (row / S.steps) * C * H;
      for (int64_t j = 0; j < C; ++j) {
        const scalar_t* cr = cb + j * H;
        scalar_t total = 0;
#pragma omp simd reduction(+ : total)
        for (int64_t h = 0; h < H; ++h) {
          total += std::max(ar[h] + cr[h], scalar_t(0)) * w[h];  // branch-free, so it vectorises
        }
        out[row * C + j] = total;
      }
    }
  });
}

// Each sample's rows in one thread: it owns that sample's gradient of c and its share of w's.
template <typename scalar_t>
void backward_impl(const Sizes& S, const scalar_t* a, const scalar_t* c, const scalar_t* w, const scalar_t* g,
                   scalar_t* ga, scalar_t* gc, scalar_t* gw_by_sample) {
  const int64_t H = S.hidden, C = S.channels, T = S.steps;
  at::parallel_for(0, S.batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const scalar_t* cb = c + b * C * H;
      scalar_t* gcb = gc + b * C * H;
      scalar_t* gwb = gw_by_sample + b * H;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t row = b * T + t;
        const scalar_t* ar = a + row * H;
        scalar_t* gar = ga + row * H;
        for (int64_t j = 0; j < C; ++j) {
          const scalar_t* cr = cb + j * H;
          scalar_t* gcr = gcb + j * H;
          const scalar_t gj = g[row * C + j];
#pragma omp simd
          for (int64_t h = 0; h < H; ++h) {
            const scalar_t z = ar[h] + cr[h];
            const scalar_t d = (z > scalar_t(0) ? gj : scalar_t(0)) * w[h];  // a select: it vectorises
            gar[h] += d;
            gcr[h] += d;
            gwb[h] += gj * std::max(z, scalar_t(0));
          }
        }
      }
    }
  });
}

}  // namespace

torch::Tensor pairwise_forward(torch::Tensor a, torch::Tensor c, torch::Tensor w) {
  const Sizes S = sizes_of(a, c, w);
  auto out = torch::empty({S.batch, S.steps, S.channels}, a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "pairwise_forward", [&] {
    forward_impl<scalar_t>(S, a.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                           out.data_ptr<scalar_t>());
  });
  return out;
}

std::vector<torch::Tensor> pairwise_backward(torch::Tensor grad, torch::Tensor a, torch::Tensor c, torch::Tensor w) {
  const Sizes S = sizes_of(a, c, w);
  TORCH_CHECK(grad.is_contiguous() && grad.scalar_type() == a.scalar_type() && grad.dim() == 3 &&
                  grad.size(0) == S.batch && grad.size(1) == S.steps && grad.size(2) == S.channels,
              "pairwise: the gradient must be a contiguous (B, T, C) tensor of the inputs' dtype");
  auto ga = torch::zeros_like(a), gc = torch::zeros_like(c);
  auto gw_by_sample = torch::zeros({S.batch, S.hidden}, a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "pairwise_backward", [&] {
    backward_impl<scalar_t>(S, a.data_ptr<scalar_t>(), c.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                            grad.data_ptr<scalar_t>(), ga.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(),
                            gw_by_sample.data_ptr<scalar_t>());
  });
  return {ga, gc, gw_by_sample.sum(0)};
}
