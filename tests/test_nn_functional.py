"""aiograd.nn.functional and the fused primitives of aiograd.ops.nn.

Forward values are compared with numpy reference formulas written here (conv2d
and max_pool2d against direct loop implementations); the fused primitives'
gradients are their rows in tests/op_rows.py, the losses composed here are
gradchecked below.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import aiograd as ag
import aiograd.nn.functional as F
from aiograd import gradcheck, gradgradcheck
from helpers import rnd, t64

one_loop = pytest.mark.parametrize("anyio_backend", ["asyncio"])  # heavy numeric checks: one backend is enough


# ----- numpy references ------------------------------------------------------------------


def np_log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct convolution: one einsum per kernel tap and group (no im2col)."""
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    N, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    Ho = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    Wo = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    Og = O // groups
    out = np.zeros((N, O, Ho, Wo))
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * Cg:(g + 1) * Cg, i * dh: i * dh + sh * (Ho - 1) + 1: sh,
                           j * dw: j * dw + sw * (Wo - 1) + 1: sw]
                out[:, g * Og:(g + 1) * Og] += np.einsum("nchw,oc->nohw", patch, w[g * Og:(g + 1) * Og, :, i, j])
    if b is not None:
        out += b.reshape(1, O, 1, 1)
    return out


def np_conv2d_grads(x, w, g, stride, padding, dilation, groups):
    """Reference gradients of np_conv2d for output gradient g (the adjoint of each tap)."""
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    N, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    Ho, Wo = g.shape[2:]
    Og = O // groups
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    gxp = np.zeros_like(xp)
    gw = np.zeros_like(w)
    for gr in range(groups):
        cs, os_ = slice(gr * Cg, (gr + 1) * Cg), slice(gr * Og, (gr + 1) * Og)
        for i in range(kh):
            for j in range(kw):
                sl = (slice(None), cs, slice(i * dh, i * dh + sh * (Ho - 1) + 1, sh),
                      slice(j * dw, j * dw + sw * (Wo - 1) + 1, sw))
                gxp[sl] += np.einsum("nohw,oc->nchw", g[:, os_], w[os_, :, i, j])
                gw[os_, :, i, j] += np.einsum("nohw,nchw->oc", g[:, os_], xp[sl])
    return gxp[:, :, ph: ph + H, pw: pw + W], gw, g.sum(axis=(0, 2, 3))


def np_max_pool2d(x, k, s, p, d, ceil_mode):
    """Loop over windows; returns values and flat H*W indices (first max in window order)."""
    N, C, H, W = x.shape

    def osize(n):
        o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        return o

    Ho, Wo = osize(H), osize(W)
    vals = np.full((N, C, Ho, Wo), -np.inf)
    idx = np.zeros((N, C, Ho, Wo), dtype=np.int64)
    for n in range(N):
        for c in range(C):
            for ho in range(Ho):
                for wo in range(Wo):
                    for i in range(k):
                        for j in range(k):
                            r, q = ho * s - p + i * d, wo * s - p + j * d
                            if 0 <= r < H and 0 <= q < W and x[n, c, r, q] > vals[n, c, ho, wo]:
                                vals[n, c, ho, wo] = x[n, c, r, q]
                                idx[n, c, ho, wo] = r * W + q
    return vals, idx


# ----- softmax / log_softmax ---------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_match_numpy(dim):
    x = rnd(3, 4, 5)
    ls = F.log_softmax(ag.tensor(x), dim=dim).numpy()
    np.testing.assert_allclose(ls, np_log_softmax(x, dim), rtol=1e-12)
    np.testing.assert_allclose(F.softmax(ag.tensor(x), dim=dim).numpy(), np.exp(np_log_softmax(x, dim)), rtol=1e-12)


def test_log_softmax_is_stable_for_huge_logits():
    x = ag.tensor([[1000.0, 0.0, -1000.0], [1e30, 1e30, 0.0]])
    ls = ag.log_softmax(x, 1).numpy()
    assert np.isfinite(ls).all()
    np.testing.assert_allclose(ls[0], [0.0, -1000.0, -2000.0])
    np.testing.assert_allclose(ag.softmax(x, 1).numpy()[1], [0.5, 0.5, 0.0])


def test_softmax_keeps_float32_and_methods_exist():
    x = ag.randn(2, 3)
    assert ag.softmax(x, 1).dtype == ag.float32
    np.testing.assert_allclose(x.softmax(1).numpy(), F.softmax(x, dim=1).numpy())
    assert x.log_softmax(-1).shape == (2, 3)


def test_softmax_implicit_dim_warns_like_torch():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        F.softmax(ag.randn(2, 3))


def test_softmax_grad_fn_names():
    x = ag.randn(2, 3, requires_grad=True)
    assert ag.softmax(x, 1).grad_fn.name() == "SoftmaxBackward0"
    assert ag.log_softmax(x, 1).grad_fn.name() == "LogSoftmaxBackward0"


# ----- nll_loss / cross_entropy ------------------------------------------------------------


def np_nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    C = logp.shape[1]
    w = np.ones(C) if weight is None else weight
    lp = np.moveaxis(logp, 1, -1).reshape(-1, C)
    t = target.reshape(-1)
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    wt = w[ts] * valid
    losses = -lp[np.arange(len(t)), ts] * wt
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / wt.sum()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_formula(reduction, weighted):
    logp = np_log_softmax(rnd(6, 4), 1)
    target = np.array([0, 3, 1, -100, 2, 3])
    weight = np.array([0.5, 1.0, 2.0, 3.0]) if weighted else None
    got = F.nll_loss(ag.tensor(logp), ag.tensor(target), None if weight is None else ag.tensor(weight),
                     reduction=reduction).numpy()
    np.testing.assert_allclose(got, np_nll(logp, target, weight, reduction=reduction), rtol=1e-12)


def test_nll_loss_k_dimensional_and_unbatched():
    logp = np_log_softmax(rnd(2, 3, 4, 5), 1)
    target = np.random.default_rng(0).integers(0, 3, (2, 4, 5))
    got = F.nll_loss(ag.tensor(logp), ag.tensor(target), reduction="none").numpy()
    np.testing.assert_allclose(got, np_nll(logp, target, reduction="none"))
    v = np_log_softmax(rnd(4), 0)
    assert F.nll_loss(ag.tensor(v), ag.tensor(2)).item() == pytest.approx(-v[2])


def test_nll_loss_all_ignored_mean_is_nan():
    out = F.nll_loss(ag.tensor(rnd(2, 3)), ag.tensor([-100, -100]))
    assert np.isnan(out.item())


_ALL_IGNORED = [
    ("nll_loss", lambda x, t: F.nll_loss(x, t), (3, 4)),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), (3, 4)),
    ("cross_entropy_smoothing", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), (3, 4)),
    ("cross_entropy_weighted_smoothing",
     lambda x, t: F.cross_entropy(x, t, weight=ag.ones(4, dtype=ag.float64), label_smoothing=0.1), (3, 4)),
    ("nll_loss_weighted", lambda x, t: F.nll_loss(x, t, weight=ag.ones(4, dtype=ag.float64)), (3, 4)),
    ("nll_loss_k_dim", lambda x, t: F.nll_loss(x, t), (2, 4, 3)),
    ("nll_loss_unbatched", lambda x, t: F.nll_loss(x, t), (4,)),
]


@pytest.mark.parametrize("name, loss, shape", _ALL_IGNORED, ids=[c[0] for c in _ALL_IGNORED])
async def test_every_target_ignored_gives_nan_loss_and_zero_gradient_like_torch(name, loss, shape):
    x = t64(rnd(*shape))
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    out = loss(x, ag.full(tshape, -100))
    assert np.isnan(out.item())
    await out.backward()
    assert x.grad.tolist() == np.zeros(shape).tolist()  # a fully padded batch must not poison the weights


async def test_zero_total_weight_without_ignoring_gives_nan_only_where_torch_does():
    x = t64(rnd(3, 4))
    out = F.nll_loss(x, ag.tensor([0, -100, 0]), weight=ag.tensor([0.0, 1.0, 1.0, 1.0], dtype=ag.float64))
    assert np.isnan(out.item())
    await out.backward()
    nan = np.zeros((3, 4), bool)
    nan[0, 0] = nan[2, 0] = True  # 0 * (1 / 0) at the zero-weight targets, as torch
    assert (np.isnan(x.grad.numpy()) == nan).all()
    assert (x.grad.numpy()[~nan] == 0).all()


@pytest.mark.parametrize("op", [ag.softmax, ag.log_softmax])
@pytest.mark.parametrize("shape, dim", [((2, 0), 1), ((2, 0), 0), ((2, 0), -1), ((0, 3), 1), ((0,), 0)])
async def test_softmax_over_empty_tensors_is_empty_like_torch(op, shape, dim):
    x = ag.zeros(*shape, requires_grad=True)
    y = op(x, dim)
    assert y.shape == shape and y.dtype == np.float32
    await y.sum().backward()
    assert x.grad.shape == shape


def test_cross_entropy_and_logsumexp_over_empty_tensors_like_torch():
    assert np.isnan(F.cross_entropy(ag.zeros(0, 4), ag.zeros(0, dtype=ag.int64)).item())
    assert ag.logsumexp(ag.zeros(2, 0), 1).tolist() == [-np.inf, -np.inf]


def test_nll_loss_errors_use_torch_wording():
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(4\)\."):
        F.nll_loss(ag.randn(3, 5), ag.tensor([0, 1, 2, 3]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(ag.randn(2, 5), ag.tensor([0, 7]))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        F.nll_loss(ag.randn(2, 5), ag.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 3\]"):
        F.nll_loss(ag.randn(2, 3, 4), ag.tensor([[0, 1, 2], [0, 1, 2]]))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.nll_loss(ag.randn(2, 5), ag.tensor([0, 1]), reduction="avg")


def np_cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean", ls=0.0):
    """torch's definition: (1 - ls) * nll + ls / C * smooth term (class indices) or soft targets."""
    logp = np_log_softmax(x, 1)
    C = x.shape[1]
    w = np.ones(C) if weight is None else weight
    wshape = [1] * x.ndim
    wshape[1] = C
    if target.shape == x.shape:  # class probabilities
        tgt = target * (1 - ls) + ls / C
        per = -(logp * tgt * w.reshape(wshape)).sum(1)
        if reduction == "none":
            return per
        return per.sum() if reduction == "sum" else per.sum() / (x.size / C)
    nll = np_nll(logp, target, weight, ignore_index, reduction)
    smooth = -(logp * w.reshape(wshape)).sum(1)
    ignore = target == ignore_index
    smooth = np.where(ignore, 0.0, smooth)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth.sum() / (w[target[~ignore]].sum())
    return (1 - ls) * nll + ls / C * ret


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("ls", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_class_indices(reduction, ls, weighted):
    x = rnd(5, 4)
    target = np.array([0, 3, -100, 2, 1])
    w = np.array([1.0, 2.0, 0.5, 1.5]) if weighted else None
    got = F.cross_entropy(ag.tensor(x), ag.tensor(target), None if w is None else ag.tensor(w),
                          reduction=reduction, label_smoothing=ls).numpy()
    np.testing.assert_allclose(got, np_cross_entropy(x, target, w, reduction=reduction, ls=ls), rtol=1e-10)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("ls", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_class_probabilities(reduction, ls, weighted):
    x = rnd(3, 4, 2)
    p = np.exp(np_log_softmax(rnd(3, 4, 2, seed=1), 1))
    w = np.array([1.0, 2.0, 0.5, 1.5]) if weighted else None
    got = F.cross_entropy(ag.tensor(x), ag.tensor(p), None if w is None else ag.tensor(w),
                          reduction=reduction, label_smoothing=ls).numpy()
    np.testing.assert_allclose(got, np_cross_entropy(x, p, w, reduction=reduction, ls=ls), rtol=1e-10)


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(4\)\."):
        F.cross_entropy(ag.randn(3, 5), ag.tensor([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities"):
        F.cross_entropy(ag.randn(2, 3), ag.tensor([[0, 1, 0], [1, 0, 0]]))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(ag.randn(2, 3), ag.tensor([0, 1]), label_smoothing=1.5)


@one_loop
async def test_losses_gradcheck():
    x = t64(rnd(4, 3))
    tgt = ag.tensor([0, 2, -100, 1])
    w = ag.tensor([1.0, 2.0, 0.5], dtype=ag.float64)
    probs = t64(np.exp(np_log_softmax(rnd(4, 3, seed=2), 1)))
    for fn, inputs in [
        (lambda a: F.nll_loss(a, tgt, w), [x]),
        (lambda a: F.nll_loss(a, tgt, reduction="none"), [x]),
        (lambda a: F.cross_entropy(a, tgt, w, label_smoothing=0.1), [x]),
        (lambda a: F.cross_entropy(a, tgt, reduction="sum"), [x]),
        (lambda a, p: F.cross_entropy(a, p, w, label_smoothing=0.2), [x, probs]),
        (lambda a, b: F.mse_loss(a, b), [x, t64(rnd(4, 3, seed=3))]),
    ]:
        assert await gradcheck(fn, inputs)
    assert await gradgradcheck(lambda a: F.cross_entropy(a, tgt, w, label_smoothing=0.1), [x])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_and_l1_loss(reduction):
    a, b = rnd(3, 4), rnd(3, 4, seed=1)
    ref = {"none": lambda v: v, "mean": np.mean, "sum": np.sum}[reduction]
    np.testing.assert_allclose(F.mse_loss(ag.tensor(a), ag.tensor(b), reduction=reduction).numpy(), ref((a - b) ** 2))
    np.testing.assert_allclose(F.l1_loss(ag.tensor(a), ag.tensor(b), reduction=reduction).numpy(), ref(np.abs(a - b)))


def test_mse_loss_warns_on_broadcast_target():
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(ag.randn(3, 2), ag.randn(2))


def test_linear_matches_numpy():
    x, w, b = rnd(5, 3), rnd(4, 3, seed=1), rnd(4, seed=2)
    np.testing.assert_allclose(F.linear(ag.tensor(x), ag.tensor(w), ag.tensor(b)).numpy(), x @ w.T + b)
    np.testing.assert_allclose(F.linear(ag.tensor(x), ag.tensor(w)).numpy(), x @ w.T)


# ----- conv2d ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), ((2, 1), (1, 0), (1, 2), 2), (1, 1, 1, 4)],
)
def test_conv2d_matches_direct_convolution(stride, padding, dilation, groups):
    x = rnd(2, 4, 7, 6)
    w = rnd(8, 4 // groups, 3, 2, seed=1)
    b = rnd(8, seed=2)
    got = F.conv2d(ag.tensor(x), ag.tensor(w), ag.tensor(b), stride, padding, dilation, groups).numpy()
    np.testing.assert_allclose(got, np_conv2d(x, w, b, stride, padding, dilation, groups), rtol=1e-10, atol=1e-12)


def test_conv2d_unbatched_same_padding_and_float32():
    x = rnd(3, 6, 6).astype(np.float32)
    w = rnd(2, 3, 3, 3, seed=1).astype(np.float32)
    out = F.conv2d(ag.tensor(x), ag.tensor(w), padding="same")
    assert out.shape == (2, 6, 6) and out.dtype == ag.float32
    np.testing.assert_allclose(out.numpy(), np_conv2d(x[None], w, padding=1)[0], rtol=1e-4, atol=1e-5)
    assert F.conv2d(ag.tensor(x), ag.tensor(w), padding="valid").shape == (2, 4, 4)


def test_conv2d_errors_use_torch_wording():
    with pytest.raises(RuntimeError, match=r"expected input\[2, 4, 8, 8\] to have 3 channels, but got 4 channels instead"):
        F.conv2d(ag.randn(2, 4, 8, 8), ag.randn(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(ag.randn(1, 1, 2, 2), ag.randn(1, 1, 3, 3))



conv_params = st.fixed_dictionaries({
    "n": st.integers(1, 2), "groups": st.integers(1, 3), "cg": st.integers(1, 2), "og": st.integers(1, 2),
    "h": st.integers(1, 7), "w": st.integers(1, 7), "kh": st.integers(1, 3), "kw": st.integers(1, 3),
    "sh": st.integers(1, 3), "sw": st.integers(1, 3), "ph": st.integers(0, 2), "pw": st.integers(0, 2),
    "dh": st.integers(1, 2), "dw": st.integers(1, 2), "bias": st.booleans(),
})


@settings(max_examples=25)
@given(conv_params)
def test_conv2d_forward_and_backward_property(p):
    assume(p["h"] + 2 * p["ph"] >= p["dh"] * (p["kh"] - 1) + 1)
    assume(p["w"] + 2 * p["pw"] >= p["dw"] * (p["kw"] - 1) + 1)
    rng = np.random.default_rng(0)
    G = p["groups"]
    x = rng.standard_normal((p["n"], G * p["cg"], p["h"], p["w"]))
    w = rng.standard_normal((G * p["og"], p["cg"], p["kh"], p["kw"]))
    b = rng.standard_normal(G * p["og"]) if p["bias"] else None
    s, pad, d = (p["sh"], p["sw"]), (p["ph"], p["pw"]), (p["dh"], p["dw"])
    xt, wt = t64(x), t64(w)
    bt = t64(b) if b is not None else None
    out = F.conv2d(xt, wt, bt, s, pad, d, G)
    ref = np_conv2d(x, w, b, s, pad, d, G)
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-10)
    g = rng.standard_normal(ref.shape)
    out.backward_sync(ag.tensor(g))
    gx, gw, gb = np_conv2d_grads(x, w, g, s, pad, d, G)
    np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-10, atol=1e-10)
    if bt is not None:
        np.testing.assert_allclose(bt.grad.numpy(), gb, rtol=1e-10, atol=1e-10)


async def test_conv2d_double_backward_says_not_supported():
    x, w = t64(rnd(1, 1, 4, 4)), t64(rnd(1, 1, 2, 2))
    out = F.conv2d(x, w).sum()
    (gx,) = await ag.grad(out, [x], create_graph=False)
    assert gx.shape == x.shape
    with pytest.raises(RuntimeError, match="conv2d double backward is not supported"):
        await ag.grad(F.conv2d(x, w).sum(), [x], create_graph=True)


async def test_conv2d_backward_twice_needs_retain_graph():
    x = t64(rnd(1, 1, 4, 4))
    w = t64(rnd(1, 1, 2, 2))
    y = F.conv2d(x, w)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    out = y.sum()
    await out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        await out.backward()


# ----- max_pool2d --------------------------------------------------------------------------


@pytest.mark.parametrize("k,s,p,d,ceil", [(2, None, 0, 1, False), (3, 2, 1, 1, True), (2, 1, 1, 2, False), (3, 2, 0, 1, True)])
def test_max_pool2d_matches_loop(k, s, p, d, ceil):
    x = rnd(2, 3, 7, 6)
    out, idx = F.max_pool2d(ag.tensor(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    rv, ri = np_max_pool2d(x, k, s or k, p, d, ceil)
    np.testing.assert_array_equal(out.numpy(), rv)
    np.testing.assert_array_equal(idx.numpy(), ri)
    assert idx.dtype == ag.int64


pool_params = st.fixed_dictionaries({
    "h": st.integers(1, 7), "w": st.integers(1, 7), "k": st.integers(1, 3), "s": st.integers(1, 3),
    "p": st.integers(0, 1), "d": st.integers(1, 2), "ceil": st.booleans(),
})


@settings(max_examples=25)
@given(pool_params)
def test_max_pool2d_property(q):
    assume(q["p"] <= ((q["k"] - 1) * q["d"] + 1) // 2)
    assume(min(q["h"], q["w"]) + 2 * q["p"] >= q["d"] * (q["k"] - 1) + 1)
    x = np.random.default_rng(0).standard_normal((2, 2, q["h"], q["w"]))
    rv, ri = np_max_pool2d(x, q["k"], q["s"], q["p"], q["d"], q["ceil"])
    assume(rv.size > 0)
    xt = t64(x)
    out = F.max_pool2d(xt, q["k"], q["s"], q["p"], q["d"], ceil_mode=q["ceil"])
    np.testing.assert_array_equal(out.detach().numpy(), rv)
    g = np.random.default_rng(1).standard_normal(rv.shape)
    out.backward_sync(ag.tensor(g))
    ref = np.zeros(x.shape).reshape(2, 2, -1)
    for n in range(2):
        for c in range(2):
            np.add.at(ref[n, c], ri[n, c].ravel(), np.where(rv[n, c] > -np.inf, g[n, c], 0).ravel())
    np.testing.assert_allclose(xt.grad.numpy(), ref.reshape(x.shape), rtol=1e-12)


def test_max_pool2d_unbatched_and_errors():
    assert F.max_pool2d(ag.randn(3, 4, 4), 2).shape == (3, 2, 2)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(ag.randn(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(ag.randn(1, 1, 1, 1), 2)


# ----- embedding / layer_norm / dropout -----------------------------------------------------


async def test_embedding_adds_gradients_of_repeated_indices_and_skips_padding():
    w = ag.randn(5, 3, requires_grad=True)
    idx = ag.tensor([[1, 2, 1], [4, 0, 1]])
    out = F.embedding(idx, w, padding_idx=0)
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[idx.numpy()])
    assert out.grad_fn.name() == "EmbeddingBackward0"
    await out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [0, 3, 1, 0, 1])
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ag.tensor([5]), w)


def test_layer_norm_matches_numpy():
    x = rnd(3, 4, 5)
    w, b = rnd(4, 5, seed=1), rnd(4, 5, seed=2)
    mu = x.mean(axis=(1, 2), keepdims=True)
    ref = (x - mu) / np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5) * w + b
    got = F.layer_norm(ag.tensor(x), (4, 5), ag.tensor(w), ag.tensor(b)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        F.layer_norm(ag.randn(2, 3), 4)


async def test_dropout_reproducible_scaled_and_identity_in_eval():
    x = ag.ones(1000, requires_grad=True)
    ag.manual_seed(3)
    a = F.dropout(x, 0.25)
    ag.manual_seed(3)
    b = F.dropout(x, 0.25)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    vals = set(np.unique(a.detach().numpy()).tolist())
    assert vals <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < (a.detach().numpy() == 0).mean() < 0.35
    await a.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), a.detach().numpy())
    assert F.dropout(x, 0.5, training=False) is x
    assert (F.dropout(x, 1.0).detach().numpy() == 0).all()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


def test_activations_are_exported():
    x = ag.tensor([-1.0, 0.0, 2.0])
    np.testing.assert_allclose(F.relu(x).numpy(), [0, 0, 2])
    np.testing.assert_allclose(F.tanh(x).numpy(), np.tanh([-1.0, 0.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(F.sigmoid(x).numpy(), 1 / (1 + np.exp([1.0, 0.0, -2.0])), rtol=1e-6)


def test_torch_names_in_ag_namespace():
    for name in ("softmax", "log_softmax", "conv2d", "max_pool2d", "dropout", "embedding", "layer_norm"):
        assert callable(getattr(ag, name))


def test_gelu_and_softplus_via_functional():
    from math import erf, log1p, exp, sqrt

    vals = [-2.0, -0.5, 0.0, 1.5]
    x = ag.tensor(vals, dtype=ag.float64)
    np.testing.assert_allclose(F.gelu(x).numpy(), [v * 0.5 * (1 + erf(v / sqrt(2))) for v in vals], rtol=1e-12)
    np.testing.assert_allclose(F.softplus(x, beta=2.0).numpy(), [log1p(exp(2 * v)) / 2 for v in vals], rtol=1e-12)
