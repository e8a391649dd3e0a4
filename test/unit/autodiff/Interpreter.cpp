//===- Interpreter.cpp - Reference interpreter for graph IR tests ---------===//
//
// Part of DistOpt. Loops over multi-indices, in double precision; clarity
// over speed (tests run it on tensors of a few dozen elements).
//
//===----------------------------------------------------------------------===//
#include "Interpreter.h"
#include "InterpreterData.h"
#include "InterpreterMath.h"
#include "InterpreterNN.h"

#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace distopt::testing;
namespace g = distopt::graph;

int64_t Tensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Tensor distopt::testing::zerosOf(ArrayRef<int64_t> shape) {
  Tensor t;
  t.shape.assign(shape.begin(), shape.end());
  t.data.assign(t.size(), 0.0);
  return t;
}

Tensor distopt::testing::zerosOf(Type type) {
  return zerosOf(cast<RankedTensorType>(type).getShape());
}

std::vector<int64_t>
distopt::testing::unravelIndex(int64_t i, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t distopt::testing::ravelIndex(const std::vector<int64_t> &idx,
                                     const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + idx[d];
  return i;
}

/// Element of `t` at the (right-aligned, broadcast) index `out`.
static double at(const Tensor &t, const std::vector<int64_t> &out) {
  size_t lead = out.size() - t.shape.size();
  int64_t i = 0;
  for (size_t d = 0; d < t.shape.size(); ++d)
    i = i * t.shape[d] + (t.shape[d] == 1 ? 0 : out[d + lead]);
  return t.data[i];
}

/// `d` combined with the update `u` as a scatter with `reduction` does.
static void combine(g::ScatterReduction reduction, double &d, double u) {
  switch (reduction) {
  case g::ScatterReduction::None:
    d = u;
    break;
  case g::ScatterReduction::Add:
    d += u;
    break;
  case g::ScatterReduction::Mul:
    d *= u;
    break;
  case g::ScatterReduction::Max:
    d = std::max(d, u);
    break;
  case g::ScatterReduction::Min:
    d = std::min(d, u);
    break;
  }
}

/// scatter_elements by its definition: every update combined into `y` at
/// its own coordinates with the axis one replaced by its index (negative
/// indices wrap).
static Tensor scatterElements(g::ScatterReduction reduction, Tensor y,
                              const Tensor &ix, const Tensor &u, int64_t axis) {
  if (axis < 0)
    axis += (int64_t)y.shape.size();
  for (int64_t i = 0; i < u.size(); ++i) {
    std::vector<int64_t> c = unravelIndex(i, u.shape);
    int64_t k = (int64_t)ix.data[i];
    c[axis] = k < 0 ? k + y.shape[axis] : k;
    combine(reduction, y.data[ravelIndex(c, y.shape)], u.data[i]);
  }
  return y;
}

template <typename F> static Tensor map(Type type, F f) {
  Tensor r = zerosOf(type);
  for (int64_t i = 0; i < r.size(); ++i)
    r.data[i] = f(unravelIndex(i, r.shape));
  return r;
}

/// (outer, n, inner) view of `shape` around `axis`.
static void around(const std::vector<int64_t> &shape, int64_t axis,
                   int64_t &outer, int64_t &n, int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  n = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

/// Rows x cols view of a normalization: layer/rms over [axis, rank), batch
/// per channel. `groupOf(i)` is the statistics group of flat element i,
/// `paramOf(i)` the parameter element it uses.
struct NormView {
  int64_t groups = 0, count = 0;
  std::vector<int64_t> group, param;
};

static NormView normView(const Tensor &x, llvm::StringRef kind, int64_t axis,
                         int64_t paramSize) {
  NormView v;
  v.group.resize(x.size());
  v.param.resize(x.size());
  int64_t rank = x.shape.size();
  if (kind == "batch") {
    int64_t outer, n, inner;
    around(x.shape, 1, outer, n, inner);
    v.groups = n;
    v.count = outer * inner;
    for (int64_t i = 0; i < x.size(); ++i)
      v.group[i] = v.param[i] = (i / inner) % n;
    return v;
  }
  if (axis < 0)
    axis += rank;
  int64_t cols = 1;
  for (int64_t d = axis; d < rank; ++d)
    cols *= x.shape[d];
  v.groups = x.size() / cols;
  v.count = cols;
  for (int64_t i = 0; i < x.size(); ++i) {
    v.group[i] = i / cols;
    v.param[i] = (i % cols) % paramSize;
  }
  return v;
}

/// Per-group mean (0 for rms) and 1/sqrt(var + eps).
static void stats(const Tensor &x, const NormView &v, bool rms, double eps,
                  std::vector<double> &mean, std::vector<double> &rstd) {
  mean.assign(v.groups, 0.0);
  rstd.assign(v.groups, 0.0);
  if (!rms)
    for (int64_t i = 0; i < x.size(); ++i)
      mean[v.group[i]] += x.data[i] / v.count;
  for (int64_t i = 0; i < x.size(); ++i) {
    double d = x.data[i] - mean[v.group[i]];
    rstd[v.group[i]] += d * d / v.count;
  }
  for (double &r : rstd)
    r = 1 / std::sqrt(r + eps);
}

namespace {
struct Runner {
  llvm::DenseMap<Value, Tensor> values;
  const llvm::StringMap<Tensor> &weights;
  std::string &error;

  const Tensor &get(Value v) { return values[v]; }
  bool run(Operation *op);
};
} // namespace

bool Runner::run(Operation *op) {
  Type rt = op->getNumResults() ? op->getResult(0).getType() : Type();
  auto set = [&](Tensor t, unsigned i = 0) {
    values[op->getResult(i)] = std::move(t);
  };
  auto norm = [&](Value xv, llvm::StringRef kind, int64_t axis, double eps,
                  Value scale, Value bias) {
    const Tensor &x = get(xv), &s = get(scale);
    NormView v = normView(x, kind, axis, s.size());
    std::vector<double> mean, rstd;
    stats(x, v, kind == "rms", eps, mean, rstd);
    Tensor y = x;
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t gi = v.group[i], p = v.param[i];
      y.data[i] = (x.data[i] - mean[gi]) * rstd[gi] * s.data[p] +
                  (bias ? get(bias).data[p] : 0.0);
    }
    return y;
  };
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<g::WeightOp>([&](g::WeightOp w) {
        auto it = weights.find(w.getSymName());
        if (it == weights.end()) {
          error = ("no value for weight " + w.getSymName()).str();
          return false;
        }
        set(it->second);
        return true;
      })
      .Case<g::StateOp>([&](g::StateOp s) {
        auto it = weights.find(s.getSymName());
        Tensor t = zerosOf(rt);
        if (it != weights.end())
          t = it->second;
        else
          t.data.assign(t.size(), s.getInit().convertToDouble());
        set(t);
        return true;
      })
      .Case<g::ConstantOp>([&](g::ConstantOp c) {
        Tensor t = zerosOf(rt);
        auto dense = cast<DenseElementsAttr>(c.getValue());
        int64_t i = 0;
        if (isa<FloatType>(dense.getElementType()))
          for (APFloat f : dense.getValues<APFloat>())
            t.data[i++] = f.convertToDouble();
        else
          // (Each branch as double: a common type of uint64_t would read
          // -1 as 2^64 - 1.)
          for (APInt v : dense.getValues<APInt>())
            t.data[i++] = v.getBitWidth() == 1 ? (double)v.getZExtValue()
                                               : (double)v.getSExtValue();
        set(t);
        return true;
      })
      .Case<g::MatmulOp>([&](g::MatmulOp m) {
        // A rank-1 lhs is a row, a rank-1 rhs a column (numpy); the result
        // drops those unit dimensions again.
        Tensor a = get(m.getLhs()), b = get(m.getRhs());
        Type mt = rt;
        if (a.shape.size() == 1 || b.shape.size() == 1) {
          std::vector<int64_t> shape = zerosOf(rt).shape;
          if (a.shape.size() == 1) {
            a.shape.insert(a.shape.begin(), 1);
            shape.insert(shape.end() - (b.shape.size() == 1 ? 0 : 1), 1);
          }
          if (b.shape.size() == 1) {
            b.shape.push_back(1);
            shape.push_back(1);
          }
          mt = RankedTensorType::get(shape, Float64Type::get(m.getContext()));
        }
        bool tl = m.getTransposeLhs(), tr = m.getTransposeRhs();
        int64_t ra = a.shape.size(), rb = b.shape.size();
        int64_t k = tl ? a.shape[ra - 2] : a.shape[ra - 1];
        Tensor y = map(mt, [&](const std::vector<int64_t> &o) {
          size_t r = o.size();
          std::vector<int64_t> ia(o.begin(), o.end() - 2), ib = ia;
          ia.resize(r), ib.resize(r);
          double sum = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            ia[r - 2] = tl ? kk : o[r - 2];
            ia[r - 1] = tl ? o[r - 2] : kk;
            ib[r - 2] = tr ? o[r - 1] : kk;
            ib[r - 1] = tr ? kk : o[r - 1];
            sum += at(a, ia) * at(b, ib);
          }
          (void)ra, (void)rb;
          return sum;
        });
        double alpha = m.getAlpha().convertToDouble(),
               beta = m.getBeta().convertToDouble();
        for (int64_t i = 0; i < y.size(); ++i) {
          y.data[i] *= alpha;
          if (m.getBias())
            y.data[i] += beta * at(get(m.getBias()), unravelIndex(i, y.shape));
        }
        y.shape = zerosOf(rt).shape;
        set(y);
        return true;
      })
      .Case<g::BinaryOp>([&](g::BinaryOp b) {
        const Tensor &l = get(b.getLhs()), &r = get(b.getRhs());
        set(map(rt, [&](const std::vector<int64_t> &o) {
          double x = at(l, o), y = at(r, o);
          if (b.getKind() == g::BinaryKind::Mod)
            return b.getFmod() ? std::fmod(x, y) : x - std::floor(x / y) * y;
          return binaryValue(b.getKind(), x, y);
        }));
        return true;
      })
      .Case<g::UnaryOp>([&](g::UnaryOp u) {
        const Tensor &x = get(u.getInput());
        double alpha = u.getAlpha() ? u.getAlpha()->convertToDouble() : 0.01;
        Tensor y = x;
        for (double &v : y.data)
          v = unaryValue(u.getKind(), v, alpha);
        set(y);
        return true;
      })
      .Case<g::UnaryGradOp>([&](g::UnaryGradOp u) {
        const Tensor &x = get(u.getInput()), &dy = get(u.getGrad());
        double alpha = u.getAlpha() ? u.getAlpha()->convertToDouble() : 0.01;
        Tensor r = x;
        for (int64_t i = 0; i < x.size(); ++i)
          r.data[i] =
              dy.data[i] * unaryDerivative(u.getKind(), x.data[i], alpha);
        set(r);
        return true;
      })
      .Case<g::WhereOp>([&](g::WhereOp w) {
        const Tensor &c = get(w.getCondition()), &l = get(w.getLhs()),
                     &r = get(w.getRhs());
        set(map(rt, [&](const std::vector<int64_t> &o) {
          return at(c, o) != 0 ? at(l, o) : at(r, o);
        }));
        return true;
      })
      .Case<g::CastOp, g::ReshapeOp, g::FlattenOp>([&](Operation *o) {
        Tensor t = get(o->getOperand(0));
        t.shape = zerosOf(rt).shape;
        set(t);
        return true;
      })
      .Case<g::ExpandOp>([&](g::ExpandOp e) {
        const Tensor &x = get(e.getInput());
        set(map(rt, [&](const std::vector<int64_t> &o) { return at(x, o); }));
        return true;
      })
      .Case<g::TransposeOp>([&](g::TransposeOp t) {
        const Tensor &x = get(t.getInput());
        auto perm = t.getPerm();
        set(map(rt, [&](const std::vector<int64_t> &o) {
          std::vector<int64_t> in(o.size());
          for (size_t i = 0; i < o.size(); ++i)
            in[perm[i]] = o[i];
          return x.data[ravelIndex(in, x.shape)];
        }));
        return true;
      })
      .Case<g::TriluOp>([&](g::TriluOp t) {
        const Tensor &x = get(t.getInput());
        int64_t k = t.getK();
        if (Value d = t.getDiagonal())
          k += static_cast<int64_t>(get(d).data[0]);
        set(map(rt, [&](const std::vector<int64_t> &o) {
          int64_t i = o[o.size() - 2], j = o[o.size() - 1];
          bool keep = t.getUpper() ? j >= i + k : j <= i + k;
          return keep ? x.data[ravelIndex(o, x.shape)] : 0.0;
        }));
        return true;
      })
      .Case<g::CumSumOp>([&](g::CumSumOp c) {
        const Tensor &x = get(c.getInput());
        int64_t rank = x.shape.size();
        // I64Attr reads back as uint64_t: convert before the sign test.
        int64_t axis = static_cast<int64_t>(c.getAxis());
        if (axis < 0)
          axis += rank;
        // The definition, one sum per element: no running state to get
        // wrong the same way the kernel might.
        set(map(rt, [&](const std::vector<int64_t> &o) {
          std::vector<int64_t> in = o;
          double s = 0;
          for (int64_t i = 0; i < x.shape[axis]; ++i) {
            bool before = c.getReverse() ? i > o[axis] : i < o[axis];
            if (before || (i == o[axis] && !c.getExclusive())) {
              in[axis] = i;
              s += x.data[ravelIndex(in, x.shape)];
            }
          }
          return s;
        }));
        return true;
      })
      .Case<g::ReduceOp>([&](g::ReduceOp r) {
        set(reduceValue(r, get(r.getInput())));
        return true;
      })
      .Case<g::SliceOp>([&](g::SliceOp sl) {
        set(sliceValue(sl, get(sl.getInput())));
        return true;
      })
      .Case<g::ConcatOp>([&](g::ConcatOp c) {
        std::vector<Tensor> inputs;
        for (Value in : c.getInputs())
          inputs.push_back(get(in));
        set(concatValue(c, inputs));
        return true;
      })
      .Case<g::PadOp>([&](g::PadOp p) {
        set(padValue(p, get(p.getInput())));
        return true;
      })
      .Case<g::SoftmaxOp, g::SoftmaxGradOp>([&](Operation *o) {
        bool grad = isa<g::SoftmaxGradOp>(o);
        const Tensor &x = get(o->getOperand(0));
        int64_t axis = o->getAttrOfType<IntegerAttr>("axis").getInt();
        bool log = o->hasAttr("log");
        if (axis < 0)
          axis += x.shape.size();
        int64_t outer, n, inner;
        around(x.shape, axis, outer, n, inner);
        Tensor y = x;
        for (int64_t a = 0; a < outer; ++a)
          for (int64_t c = 0; c < inner; ++c) {
            auto idx = [&](int64_t k) { return (a * n + k) * inner + c; };
            if (grad) {
              const Tensor &dy = get(o->getOperand(1));
              double s = 0;
              for (int64_t k = 0; k < n; ++k)
                s += log ? dy.data[idx(k)] : dy.data[idx(k)] * x.data[idx(k)];
              for (int64_t k = 0; k < n; ++k)
                y.data[idx(k)] =
                    log ? dy.data[idx(k)] - std::exp(x.data[idx(k)]) * s
                        : x.data[idx(k)] * (dy.data[idx(k)] - s);
              continue;
            }
            double mx = -INFINITY, s = 0;
            for (int64_t k = 0; k < n; ++k)
              mx = std::max(mx, x.data[idx(k)]);
            for (int64_t k = 0; k < n; ++k)
              s += std::exp(x.data[idx(k)] - mx);
            for (int64_t k = 0; k < n; ++k)
              y.data[idx(k)] = log ? x.data[idx(k)] - mx - std::log(s)
                                   : std::exp(x.data[idx(k)] - mx) / s;
          }
        set(y);
        return true;
      })
      .Case<g::LayerNormOp>([&](g::LayerNormOp n) {
        set(norm(n.getInput(), "layer", n.getAxis(),
                 n.getEpsilon().convertToDouble(), n.getScale(), n.getBias()));
        return true;
      })
      .Case<g::RMSNormOp>([&](g::RMSNormOp n) {
        set(norm(n.getInput(), "rms", n.getAxis(),
                 n.getEpsilon().convertToDouble(), n.getScale(), n.getBias()));
        return true;
      })
      .Case<g::NormGradOp, g::NormGradParamsOp>([&](Operation *o) {
        auto kind = o->getAttrOfType<StringAttr>("kind").getValue();
        auto axisAttr = o->getAttrOfType<IntegerAttr>("axis");
        auto epsAttr = o->getAttrOfType<FloatAttr>("epsilon");
        int64_t axis = axisAttr ? axisAttr.getInt() : -1;
        double eps = epsAttr ? epsAttr.getValueAsDouble() : 1e-5;
        bool params = isa<g::NormGradParamsOp>(o);
        const Tensor &x = get(o->getOperand(0));
        const Tensor &dy = get(o->getOperand(params ? 1 : 2));
        int64_t paramSize =
            params ? zerosOf(rt).size() : get(o->getOperand(1)).size();
        NormView v = normView(x, kind, axis, paramSize);
        std::vector<double> mean, rstd;
        bool rms = kind == "rms";
        stats(x, v, rms, eps, mean, rstd);
        auto xhat = [&](int64_t i) {
          return (x.data[i] - mean[v.group[i]]) * rstd[v.group[i]];
        };
        if (params) {
          Tensor ds = zerosOf(rt), db = zerosOf(rt);
          for (int64_t i = 0; i < x.size(); ++i) {
            ds.data[v.param[i]] += dy.data[i] * xhat(i);
            db.data[v.param[i]] += dy.data[i];
          }
          set(ds, 0);
          if (o->getNumResults() == 2)
            set(db, 1);
          return true;
        }
        const Tensor &s = get(o->getOperand(1));
        std::vector<double> mg(v.groups, 0.0), mgx(v.groups, 0.0);
        for (int64_t i = 0; i < x.size(); ++i) {
          double gs = dy.data[i] * s.data[v.param[i]];
          mg[v.group[i]] += gs / v.count;
          mgx[v.group[i]] += gs * xhat(i) / v.count;
        }
        Tensor dx = x;
        for (int64_t i = 0; i < x.size(); ++i) {
          int64_t gi = v.group[i];
          double gs = dy.data[i] * s.data[v.param[i]];
          dx.data[i] = rstd[gi] * (gs - (rms ? 0 : mg[gi]) - xhat(i) * mgx[gi]);
        }
        set(dx);
        return true;
      })
      .Case<g::ConvOp, g::ConvGradInputOp, g::ConvGradWeightOp>(
          [&](Operation *o) {
            auto conv = dyn_cast<g::ConvOp>(o);
            Tensor y;
            if (!convValue(o, get(o->getOperand(0)), get(o->getOperand(1)),
                           conv && conv.getBias() ? &get(conv.getBias())
                                                  : nullptr,
                           y, error))
              return false;
            set(y);
            return true;
          })
      .Case<g::PoolOp, g::PoolGradOp>([&](Operation *o) {
        bool grad = isa<g::PoolGradOp>(o);
        Tensor y;
        if (!poolValue(o, get(o->getOperand(0)),
                       grad ? &get(o->getOperand(1)) : nullptr, y, error))
          return false;
        set(y);
        return true;
      })
      .Case<g::BatchNormOp>([&](g::BatchNormOp bn) {
        if (!bn.getTraining()) {
          error = "the interpreter runs training-form batch_norm only";
          return false;
        }
        set(norm(bn.getInput(), "batch", 1, bn.getEpsilon().convertToDouble(),
                 bn.getScale(), bn.getBias()));
        // Running statistics are not on the loss path: report the inputs.
        for (unsigned i = 1; i < bn->getNumResults(); ++i)
          set(get(bn->getOperand(2 + i)), i);
        return true;
      })
      .Case<g::SoftmaxCrossEntropyOp, g::SoftmaxCrossEntropyGradOp>(
          [&](Operation *o) {
            bool grad = isa<g::SoftmaxCrossEntropyGradOp>(o);
            const Tensor &x = get(o->getOperand(0)),
                         &labels = get(o->getOperand(1));
            int64_t rows = x.shape[0], classes = x.shape[1];
            Tensor dx = x;
            double loss = 0, scale = grad ? get(o->getOperand(2)).data[0] : 0;
            for (int64_t r = 0; r < rows; ++r) {
              double mx = -INFINITY, s = 0;
              for (int64_t c = 0; c < classes; ++c)
                mx = std::max(mx, x.data[r * classes + c]);
              for (int64_t c = 0; c < classes; ++c)
                s += std::exp(x.data[r * classes + c] - mx);
              int64_t label = (int64_t)labels.data[r];
              loss -= (x.data[r * classes + label] - mx - std::log(s)) / rows;
              for (int64_t c = 0; c < classes; ++c)
                dx.data[r * classes + c] =
                    (std::exp(x.data[r * classes + c] - mx) / s -
                     (c == label)) *
                    scale / rows;
            }
            if (grad) {
              set(dx);
            } else {
              Tensor l = zerosOf(rt);
              l.data[0] = loss;
              set(l);
            }
            return true;
          })
      .Case<g::IotaOp>([&](g::IotaOp io) {
        auto num = [](Attribute a) {
          if (auto i = dyn_cast<IntegerAttr>(a))
            return (double)i.getInt();
          return cast<FloatAttr>(a).getValueAsDouble();
        };
        double start = num(io.getStart()), delta = num(io.getDelta());
        set(map(rt, [&](const std::vector<int64_t> &o) {
          return start + (double)o[0] * delta;
        }));
        return true;
      })
      // The index ops by their definitions (negative indices wrap).
      .Case<g::GatherElementsOp>([&](g::GatherElementsOp ga) {
        const Tensor &x = get(ga.getData()), &ix = get(ga.getIndices());
        int64_t axis = static_cast<int64_t>(ga.getAxis());
        if (axis < 0)
          axis += (int64_t)x.shape.size();
        set(map(rt, [&](const std::vector<int64_t> &o) {
          std::vector<int64_t> in = o;
          int64_t k = (int64_t)ix.data[ravelIndex(o, ix.shape)];
          in[axis] = k < 0 ? k + x.shape[axis] : k;
          return x.data[ravelIndex(in, x.shape)];
        }));
        return true;
      })
      // top_k by its definition: each line's positions sorted best first,
      // equal values lower index first, the first k kept.
      .Case<g::TopKOp>([&](g::TopKOp top) {
        const Tensor &x = get(top.getInput());
        int64_t axis = static_cast<int64_t>(top.getAxis());
        if (axis < 0)
          axis += (int64_t)x.shape.size();
        Tensor v = map(top.getValues().getType(),
                       [](const std::vector<int64_t> &) { return 0.0; });
        Tensor ix = v;
        for (int64_t i = 0; i < v.size(); ++i) {
          std::vector<int64_t> c = unravelIndex(i, v.shape);
          std::vector<int64_t> line(x.shape[axis]);
          std::iota(line.begin(), line.end(), 0);
          auto at = [&](int64_t p) {
            std::vector<int64_t> in = c;
            in[axis] = p;
            return x.data[ravelIndex(in, x.shape)];
          };
          std::stable_sort(line.begin(), line.end(), [&](int64_t a, int64_t b) {
            return top.getLargest() ? at(a) > at(b) : at(a) < at(b);
          });
          ix.data[i] = (double)line[c[axis]];
          v.data[i] = at(line[c[axis]]);
        }
        set(v, 0);
        set(ix, 1);
        return true;
      })
      .Case<g::GatherNDOp>([&](g::GatherNDOp ga) {
        const Tensor &x = get(ga.getData()), &ix = get(ga.getIndices());
        int64_t b = static_cast<int64_t>(ga.getBatchDims()),
                k = ix.shape.back(), q = ix.shape.size() - 1;
        set(map(rt, [&](const std::vector<int64_t> &o) {
          std::vector<int64_t> in(o.begin(), o.begin() + b),
              tuple(o.begin(), o.begin() + q);
          tuple.push_back(0);
          for (int64_t j = 0; j < k; ++j) {
            tuple[q] = j;
            int64_t v = (int64_t)ix.data[ravelIndex(tuple, ix.shape)];
            in.push_back(v < 0 ? v + x.shape[b + j] : v);
          }
          in.insert(in.end(), o.begin() + q, o.end());
          return x.data[ravelIndex(in, x.shape)];
        }));
        return true;
      })
      .Case<g::ScatterElementsOp>([&](g::ScatterElementsOp sc) {
        set(scatterElements(sc.getReduction(), get(sc.getData()),
                            get(sc.getIndices()), get(sc.getUpdates()),
                            sc.getAxis()));
        return true;
      })
      .Case<g::ScatterNDOp>([&](g::ScatterNDOp sc) {
        const Tensor &ix = get(sc.getIndices()), &u = get(sc.getUpdates());
        Tensor y = get(sc.getData());
        int64_t k = ix.shape.back(), inner = 1;
        for (size_t d = k; d < y.shape.size(); ++d)
          inner *= y.shape[d];
        for (int64_t i = 0; i < u.size(); ++i) {
          int64_t q = i / inner, r = i % inner;
          std::vector<int64_t> c(y.shape.size());
          for (int64_t j = 0; j < k; ++j) {
            int64_t v = (int64_t)ix.data[q * k + j];
            c[j] = v < 0 ? v + y.shape[j] : v;
          }
          std::vector<int64_t> tail = unravelIndex(
              r, std::vector<int64_t>(y.shape.begin() + k, y.shape.end()));
          std::copy(tail.begin(), tail.end(), c.begin() + k);
          combine(sc.getReduction(), y.data[ravelIndex(c, y.shape)], u.data[i]);
        }
        set(y);
        return true;
      })
      .Case<g::EmbeddingOp>([&](g::EmbeddingOp em) {
        const Tensor &table = get(em.getTable()), &ids = get(em.getIndices());
        int64_t cols = table.shape[1];
        Tensor y = zerosOf(rt);
        for (int64_t i = 0; i < ids.size(); ++i)
          for (int64_t c = 0; c < cols; ++c)
            y.data[i * cols + c] = table.data[(int64_t)ids.data[i] * cols + c];
        set(y);
        return true;
      })
      .Case<g::ScatterAddOp>([&](g::ScatterAddOp sc) {
        if (sc.getElements()) {
          // gather_elements' and top_k's gradient: a scatter_elements add
          // of dy into zeros.
          set(scatterElements(g::ScatterReduction::Add, zerosOf(rt),
                              get(sc.getIndices()), get(sc.getGrad()),
                              sc.getAxis()));
          return true;
        }
        if (sc.getAxis() != 0) {
          error = "the interpreter runs scatter_add along axis 0 only";
          return false;
        }
        const Tensor &ids = get(sc.getIndices()), &dy = get(sc.getGrad());
        Tensor r = zerosOf(rt);
        int64_t row = r.size() / r.shape[0];
        for (int64_t i = 0; i < ids.size(); ++i)
          for (int64_t c = 0; c < row; ++c)
            r.data[(int64_t)ids.data[i] * row + c] += dy.data[i * row + c];
        set(r);
        return true;
      })
      .Case<g::UnscaleOp>([&](g::UnscaleOp u) {
        double scale = get(u.getScale()).data[0];
        bool inf = false;
        for (auto [i, grad] : llvm::enumerate(u.getGrads())) {
          Tensor t = get(grad);
          for (double &v : t.data) {
            v /= scale;
            inf |= !std::isfinite(v);
          }
          set(t, i);
        }
        Tensor flag = zerosOf(u.getResults().back().getType());
        flag.data[0] = inf;
        set(flag, u.getGrads().size());
        return true;
      })
      .Case<g::SgdUpdateOp>([&](g::SgdUpdateOp s) {
        if (s.getMomentumBuf()) {
          error = "the interpreter runs plain SGD only";
          return false;
        }
        const Tensor &w = get(s.getParam()), &gr = get(s.getGrad());
        Tensor y = w;
        double lr = s.getLr().convertToDouble(),
               wd = s.getWeightDecay().convertToDouble();
        bool skip = s.getSkip() && get(s.getSkip()).data[0] != 0;
        for (int64_t i = 0; i < w.size() && !skip; ++i)
          y.data[i] = w.data[i] - lr * (gr.data[i] + wd * w.data[i]);
        set(y);
        return true;
      })
      .Default([&](Operation *o) {
        error = "the test interpreter cannot run " +
                o->getName().getStringRef().str();
        return false;
      });
}

bool distopt::testing::interpret(func::FuncOp func,
                                 const std::vector<Tensor> &args,
                                 const llvm::StringMap<Tensor> &weights,
                                 std::vector<Tensor> &results,
                                 std::string &error) {
  Runner runner{llvm::DenseMap<Value, Tensor>(), weights, error};
  for (auto [arg, value] : llvm::zip(func.getArguments(), args))
    runner.values[arg] = value;
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      results.clear();
      for (Value v : ret.getOperands())
        results.push_back(runner.get(v));
      return true;
    }
    if (!runner.run(&op))
      return false;
  }
  return false;
}
