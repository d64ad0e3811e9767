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


async def test_conv2d_double_backward_records_unfold_and_fold():
    """NOTE [Convolution gradients]: a create_graph pass records the gradient as fold/unfold and matmuls."""
    x, w = t64(rnd(1, 1, 4, 4)), t64(rnd(1, 1, 2, 2))
    gx, gw = await ag.grad((F.conv2d(x, w, padding=1) ** 2).sum(), [x, w], create_graph=True)
    assert gx.grad_fn.name() == "ViewBackward0" and gw.grad_fn is not None
    assert await ag.gradgradcheck(lambda a, b: F.conv2d(a, b, stride=2, padding=1), (x, w))


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


def test_tiling_max_pool2d_ties_and_nan_as_torch():
    # NOTE [Tiling max pool]: a tie sends the gradient to the first maximum; a NaN is the maximum
    x = np.array([[[[1.0, 1.0, 0.0, 2.0], [1.0, 0.0, 2.0, 2.0], [5.0, 3.0, np.nan, 1.0], [5.0, 5.0, 0.0, np.nan]]]])
    for data, want_out, want_grad in [
        (x[..., :2, :], [[1.0, 2.0]], [[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]),
        (x, [[1.0, 2.0], [5.0, np.nan]], [[1, 0, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]]),
    ]:
        xt = t64(data)
        out = F.max_pool2d(xt, 2)
        np.testing.assert_array_equal(out.detach().numpy()[0, 0], want_out)
        out.backward_sync(ag.ones_like(out))
        np.testing.assert_array_equal(xt.grad.numpy()[0, 0], want_grad)


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


NAN_ROW = [float("nan"), -1.0, 0.5, 2.0, 7.0]


@pytest.mark.parametrize(
    "fn, grad",
    [  # torch 2.13's gradients at NAN_ROW: a NaN input passes the incoming gradient through
        (F.elu, [1.0, 0.36787944117144233, 1.0, 1.0, 1.0]),
        (F.selu, [1.0507009873554805, 0.646768603034814] + [1.0507009873554805] * 3),
        (F.celu, [1.0, 0.36787944117144233, 1.0, 1.0, 1.0]),
        (F.hardtanh, [1.0, 0.0, 1.0, 0.0, 0.0]),
        (F.relu6, [1.0, 0.0, 1.0, 1.0, 0.0]),
        (lambda a: F.threshold(a, 0.1, 20.0), [1.0, 0.0, 1.0, 1.0, 1.0]),
    ],
    ids=["elu", "selu", "celu", "hardtanh", "relu6", "threshold"],
)
def test_piecewise_activations_pass_the_gradient_at_nan_as_torch(fn, grad):
    x = t64(NAN_ROW)
    y = fn(x)
    assert np.isnan(y.detach().numpy()[0])  # threshold keeps NaN too (it does not become `value`)
    (g,) = ag.grad(y.sum(), [x])
    np.testing.assert_allclose(g.numpy(), grad, rtol=1e-12)


def test_gelu_and_softplus_via_functional():
    from math import erf, log1p, exp, sqrt

    vals = [-2.0, -0.5, 0.0, 1.5]
    x = ag.tensor(vals, dtype=ag.float64)
    np.testing.assert_allclose(F.gelu(x).numpy(), [v * 0.5 * (1 + erf(v / sqrt(2))) for v in vals], rtol=1e-12)
    np.testing.assert_allclose(F.softplus(x, beta=2.0).numpy(), [log1p(exp(2 * v)) / 2 for v in vals], rtol=1e-12)


# ----- the torch.nn.functional breadth: errors, dtypes, edge cases (values and gradients against torch:
# tests/test_nn_reference.py; gradcheck and gradgradcheck: the op rows) --------------------------------

_x4 = ag.zeros(2, 3, 6, 6)
_x3 = ag.zeros(2, 3, 8)

# (call, exception type, torch's message)
ERRORS = [
    (lambda: F.conv1d(_x4, ag.zeros(4, 3, 2)), RuntimeError,
     "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [2, 3, 6, 6]"),
    (lambda: F.conv1d(_x3, ag.zeros(4, 2, 2)), RuntimeError,
     "Given groups=1, weight of size [4, 2, 2], expected input[2, 3, 8] to have 2 channels, but got 3 channels"),
    (lambda: F.conv_transpose2d(_x4, ag.zeros(2, 4, 2, 2)), RuntimeError,
     "Given transposed=1, weight of size [2, 4, 2, 2], expected input[2, 3, 6, 6] to have 2 channels"),
    (lambda: F.conv_transpose2d(_x4, ag.zeros(3, 4, 2, 2), output_padding=1), RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_height: 1 "
     "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1"),
    (lambda: F.conv2d(_x4, ag.zeros(4, 3, 2, 2), ag.zeros(3)), RuntimeError,
     "expected bias to be 1-dimensional with 4 elements, but got bias of size [3] instead"),
    (lambda: F.conv1d(_x3, ag.zeros(4, 3, 4), padding="same", stride=2), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.unfold(_x4, 7), RuntimeError, "calculated shape of the array of sliding blocks as (0, 0)"),
    (lambda: F.fold(ag.zeros(2, 12, 20), (6, 6), 2), RuntimeError,
     "expected size of input's dimension 2 to match the calculated number of sliding blocks 5 * 5 = 25, "
     "but got input.size(2)=20."),
    (lambda: F.max_pool1d(ag.zeros(2, 3, 8), 2, padding=2), RuntimeError,
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=2"),
    (lambda: F.avg_pool2d(_x4, 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    (lambda: F.avg_pool2d(_x4, 3, divisor_override=0), RuntimeError, "divisor must be not zero"),
    (lambda: F.avg_pool1d(_x4, 2), RuntimeError, "Expected 2 to 3 dimensions, but got 4-dimensional tensor"),
    (lambda: F.pad(_x3, (1, 2, 3)), RuntimeError, "Padding length must be divisible by 2"),
    (lambda: F.pad(_x4, (1, 1), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 4D input tensor."),
    (lambda: F.pad(_x3, (8, 1), mode="reflect"), RuntimeError,
     "Padding size should be less than the corresponding input dimension, but got: padding (8, 1) at dimension 2"),
    (lambda: F.pad(_x3, (9, 1), mode="circular"), RuntimeError, "Padding value causes wrapping around more than once."),
    (lambda: F.pad(_x3, (1, 1), mode="foo"), NotImplementedError, "Unrecognised padding mode foo"),
    (lambda: F.pad(_x3, (1, 1), mode="reflect", value=1.0), RuntimeError,
     'Padding mode "reflect" doesn\'t take in value argument'),
    (lambda: F.interpolate(_x4, size=3, scale_factor=2), ValueError, "only one of size or scale_factor should be defined"),
    (lambda: F.interpolate(_x4, scale_factor=2, mode="linear"), NotImplementedError,
     "Got 4D input, but linear mode needs 3D input"),
    (lambda: F.interpolate(_x4, scale_factor=2, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes"),
    (lambda: F.batch_norm(_x3, None, None), RuntimeError, "running_mean must be defined in evaluation mode"),
    (lambda: F.batch_norm(_x3, None, None, ag.zeros(2), training=True), RuntimeError,
     "weight should contain 3 elements not 2"),
    (lambda: F.group_norm(_x3, 2), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 3, 8] and "
     "num_groups=2"),
    (lambda: F.instance_norm(ag.zeros(2, 3)), ValueError, "Expected more than 1 spatial element when training"),
    (lambda: F.rms_norm(_x3, (3,)), RuntimeError,
     "Given normalized_shape=[3], expected input with shape [*3], but got input of size[2, 3, 8]"),
    (lambda: F.glu(ag.zeros(2, 3)), RuntimeError, "Halving dimension must be even, but dimension 1 is size 3"),
    (lambda: F.prelu(_x4, ag.zeros(2)), RuntimeError,
     "Mismatch of parameter numbers and input channel size. Found parameter numbers = 2 and channel size = 3."),
    (lambda: F.silu(ag.tensor([1, 2])), NotImplementedError, "\"silu_cpu\" not implemented for 'Long'"),
    (lambda: F.hardtanh(ag.zeros(2), 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
    (lambda: F.celu(ag.zeros(2), 0.0), RuntimeError, "ZeroDivisionError: alpha cannot be 0 for CELU"),
    (lambda: F.binary_cross_entropy(ag.tensor([1.5]), ag.tensor([1.0])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(ag.zeros(2, 3), ag.zeros(3)), ValueError,
     "Using a target size (torch.Size([3])) that is different to the input size (torch.Size([2, 3])) is deprecated"),
    (lambda: F.binary_cross_entropy_with_logits(ag.zeros(2, 3), ag.zeros(3)), ValueError,
     "Target size (torch.Size([3])) must be the same as input size (torch.Size([2, 3]))"),
    (lambda: F.binary_cross_entropy(ag.zeros(2), ag.zeros(2), ag.ones(2, requires_grad=True)), RuntimeError,
     "The function 'binary_cross_entropy' is not differentiable with respect to argument 'weight'"),
    (lambda: F.smooth_l1_loss(ag.zeros(2), ag.zeros(2), beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda: F.huber_loss(ag.zeros(2), ag.zeros(2), delta=0.0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
    (lambda: F.mse_loss(ag.zeros(2), ag.zeros(2), weight=ag.zeros(3)), ValueError,
     "Weights and input must have the same size."),
    (lambda: F.l1_loss(ag.zeros(2), ag.zeros(2), reduction="foo"), ValueError, "foo is not a valid value for reduction"),
    (lambda: F.kl_div(ag.zeros(2), ag.tensor([1, 2]), reduction="sum"), RuntimeError,
     "kl_div: Integral inputs not supported."),
    (lambda: F.one_hot(ag.tensor([1.0])), RuntimeError, "one_hot is only applicable to index tensor of type LongTensor."),
    (lambda: F.one_hot(ag.tensor([3]), 2), RuntimeError, "Class values must be smaller than num_classes."),
    (lambda: F.scaled_dot_product_attention(_x4, _x4, _x4, ag.zeros(6, 6, dtype=ag.bool_), is_causal=True),
     RuntimeError, "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"),
    (lambda: F.scaled_dot_product_attention(_x4, _x4.double(), _x4), RuntimeError,
     "Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype: double"),
    (lambda: F.embedding(ag.tensor([0]), ag.zeros(3, 2), sparse=True), NotImplementedError, "sparse"),
    (lambda: F.margin_ranking_loss(ag.zeros(2), ag.zeros(2), ag.zeros(1, 2)), RuntimeError,
     "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: torch.Size([2]), "
     "input2: torch.Size([2]), target: torch.Size([1, 2])"),
    (lambda: F.cosine_embedding_loss(ag.zeros(2, 2, 2), ag.zeros(2, 2, 2), ag.zeros(2)), RuntimeError,
     "cosine_embedding_loss: Expected 1D or 2D inputs of the same dimension"),
    (lambda: F.triplet_margin_loss(ag.zeros(2, 3), ag.zeros(2, 3), ag.zeros(3)), RuntimeError,
     "The anchor, positive, and negative tensors are expected to have the same number of dimensions"),
    (lambda: F.gaussian_nll_loss(ag.zeros(2, 3), ag.zeros(2, 3), ag.zeros(3, 3)), ValueError,
     "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(ag.zeros(2), ag.zeros(2), ag.tensor([1.0, -1.0])), ValueError,
     "var has negative entry/entries"),
    (lambda: F.pixel_shuffle(ag.zeros(2, 3), 2), RuntimeError,
     "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"),
    (lambda: F.pixel_shuffle(ag.zeros(1, 3, 2, 2), 2), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
     "input.size(-3)=3 is not divisible by 4"),
    (lambda: F.pixel_unshuffle(ag.zeros(1, 4, 4, 3), 2), RuntimeError,
     "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=3 is not divisible by 2"),
    (lambda: F.bilinear(ag.zeros(3, 4), ag.zeros(2, 5), ag.zeros(6, 4, 5)), RuntimeError,
     "bilinear(): input batch dimensions do not match at dim 0: got 3 and 2"),
    (lambda: F.bilinear(ag.zeros(3, 4), ag.zeros(3, 5), ag.zeros(6, 4, 5), ag.zeros(5)), RuntimeError,
     "bilinear(): bias size does not match weight size: got 5 but expected 6"),
    (lambda: F.pdist(ag.zeros(2, 3, 4)), RuntimeError, "pdist only supports 2D tensors, got: 3D"),
    (lambda: F.dropout1d(ag.zeros(2, 3, 4, 5), 1.5), ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: F.dropout1d(ag.zeros(2, 3, 4, 5)), RuntimeError, "dropout1d: Expected 2D or 3D input, but received a 4D"),
]


@pytest.mark.parametrize("call, exc, message", ERRORS, ids=[m[:40] for _, _, m in ERRORS])
def test_errors_are_torchs(call, exc, message) -> None:
    with pytest.raises(exc) as info:
        call()
    assert message in str(info.value)


def test_integer_inputs_follow_torch() -> None:
    x = ag.tensor([1, 7])
    assert F.relu6(x).tolist() == [1, 6] and F.relu6(x).dtype == np.int64
    assert F.hardtanh(x, 0, 5).tolist() == [1, 5] and F.threshold(x, 2, 5).tolist() == [5, 7]
    assert F.pad(ag.tensor([[0, 1, 2]]), (1, 1), value=2.5).tolist() == [[2, 0, 1, 2, 2]]
    assert F.max_pool1d(ag.tensor([[[1, 5, 2, 0]]]), 2).tolist() == [[[5, 2]]]


@pytest.mark.parametrize("fn", [F.silu, F.mish, F.elu, F.selu, F.hardswish, F.logsigmoid, F.leaky_relu, F.glu,
                                lambda x: F.layer_norm(x, (4,)), lambda x: F.rms_norm(x, (4,)),
                                lambda x: F.interpolate(x[None], scale_factor=2, mode="linear")])
def test_float32_stays_float32(fn) -> None:
    assert fn(ag.randn(3, 4)).dtype == np.float32


def test_activations_at_extreme_inputs_are_finite_and_quiet() -> None:
    x = ag.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=ag.float64)
    for fn in (F.silu, F.mish, F.elu, F.selu, F.celu, F.logsigmoid, F.softsign):
        assert np.isfinite(fn(x).numpy()).all(), fn
    assert F.logsigmoid(x).numpy()[0] == -1000.0
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(x, ag.ones(5, dtype=ag.float64),
                                                                  reduction="none").numpy()[[0, 4]], [1000.0, 0.0])


async def test_functional_inplace_variants_rebase_history() -> None:
    a = t64([-1.0, 0.5, 2.0])
    y = a * 1
    assert F.leaky_relu_(y, 0.1) is y and y.grad_fn.name() == "LeakyReluBackward0"
    await y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.1, 1.0, 1.0])
    z = ag.tensor([-1.0, 1.0])
    F.relu(z, inplace=True)
    F.hardtanh_(z, -0.5, 0.5)
    assert z.tolist() == [0.0, 0.5]


def test_max_pool_keeps_the_first_maximum_and_nan_like_torch() -> None:
    x = ag.tensor([[[0.0, 0.0, 1.0, 1.0, float("nan"), 3.0]]])
    out, idx = F.max_pool1d(x, 2, return_indices=True)
    assert idx.tolist() == [[[0, 2, 4]]] and np.isnan(out.numpy()[0, 0, 2])


def test_attention_fully_masked_rows_give_zeros_and_dropout_is_seeded() -> None:
    q = ag.randn(1, 3, 4)
    mask = ag.tensor([[True, True, False], [False, False, False], [True, False, True]])
    out = F.scaled_dot_product_attention(q, q, q, mask)
    assert (out.numpy()[0, 1] == 0).all() and np.isfinite(out.numpy()).all()
    ag.manual_seed(3)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    ag.manual_seed(3)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_one_hot_and_embedding_options() -> None:
    assert F.one_hot(ag.tensor([0, 2])).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(ag.tensor([[1]]), 3).dtype == np.int64


async def test_embedding_backward_adds_repeated_rows_on_every_path() -> None:
    """NOTE [Row scatter]: one-hot matmul (small), CSR product (large), assignment (unique indices)."""
    for rows, idx in ((5, np.array([[0, 3, 3], [4, 0, 0]])), (300, np.random.default_rng(0).integers(0, 300, (20, 30))),
                      (300, np.arange(280))):
        w = t64(rnd(rows, 4))
        g = rnd(*idx.shape, 4, seed=1)
        out = F.embedding(ag.tensor(idx), w)
        await out.backward(ag.tensor(g))
        want = np.zeros((rows, 4))
        np.add.at(want, idx.reshape(-1), g.reshape(-1, 4))
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12, atol=1e-12)


# ----- the margin, embedding and likelihood losses, reshuffling, bilinear, pdist (composed: gradchecked here;
# values and gradients against torch in tests/test_nn_reference.py) ---------------------------------------

_SIGN4 = ag.tensor([1.0, -1.0, -1.0, 1.0], dtype=ag.float64)
_SIGN43 = ag.tensor(np.where(rnd(4, 3, seed=9) > 0, 1.0, -1.0))
_COUNTS = ag.tensor([[0.0, 1.0, 3.0], [2.0, 5.0, 0.0], [1.0, 4.0, 7.0], [0.0, 2.0, 1.0]], dtype=ag.float64)
_LABELS = ag.tensor((rnd(4, 3, seed=8) > 0).astype(np.float64))

COMPOSED = {
    "margin_ranking_loss": (lambda a, b: F.margin_ranking_loss(a, b, _SIGN43, 0.3, reduction="sum"),
                            [(4, 3), (4, 3)]),
    "margin_ranking_loss 0-d": (lambda a, b: F.margin_ranking_loss(a, b, ag.tensor(-1.0, dtype=ag.float64), 0.1),
                                [(), ()]),
    "hinge_embedding_loss": (lambda a: F.hinge_embedding_loss(a, _SIGN43, 2.5, reduction="none"), [(4, 3)]),
    "soft_margin_loss": (lambda a: F.soft_margin_loss(a, _SIGN43), [(4, 3)]),
    "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(a, b, _SIGN4, -0.5), [(4, 5), (4, 5)]),
    "cosine_embedding_loss 1-d": (lambda a, b: F.cosine_embedding_loss(a, b, _SIGN4[0], reduction="none"),
                                  [(5,), (5,)]),
    "triplet_margin_loss swap p=3": (lambda a, p, n: F.triplet_margin_loss(a, p, n, 3.0, 3, swap=True),
                                     [(4, 5), (4, 5), (4, 5)]),
    "multilabel_soft_margin_loss": (lambda a, w: F.multilabel_soft_margin_loss(a, _LABELS, w), [(4, 3), (3,)]),
    "poisson_nll_loss full": (lambda a: F.poisson_nll_loss(a, _COUNTS, full=True, reduction="sum"), [(4, 3)]),
    "poisson_nll_loss rates": (lambda a: F.poisson_nll_loss(a.abs() + 0.5, _COUNTS, log_input=False), [(4, 3)]),
    "gaussian_nll_loss": (lambda a, t, v: F.gaussian_nll_loss(a, t, v * v + 0.1, full=True),
                          [(4, 3), (4, 3), (4, 1)]),
    "gaussian_nll_loss var per row": (lambda a, t, v: F.gaussian_nll_loss(a, t, v * v + 0.1, reduction="none"),
                                      [(4, 3), (4, 3), (4,)]),
    "pixel_shuffle": (lambda a: F.pixel_shuffle(a, 2), [(1, 8, 2, 3)]),
    "pixel_unshuffle": (lambda a: F.pixel_unshuffle(a, 2), [(3, 4, 2)]),
    "bilinear": (F.bilinear, [(2, 3), (2, 4), (5, 3, 4), (5,)]),
    "bilinear 1-d": (F.bilinear, [(3,), (4,), (2, 3, 4)]),
    "pdist": (lambda a: F.pdist(a, 1.5), [(4, 3)]),
    "cosine_similarity broadcast": (lambda a, b: F.cosine_similarity(a, b, 0), [(3, 4), (1, 4)]),
}


@one_loop
@pytest.mark.parametrize("name", sorted(COMPOSED))
async def test_composed_functions_gradcheck_and_gradgradcheck(name):
    fn, shapes = COMPOSED[name]
    inputs = [t64(rnd(*s, seed=i) if s else np.float64(rnd(1, seed=i)[0])) for i, s in enumerate(shapes)]
    assert await gradcheck(fn, inputs)
    assert await gradgradcheck(fn, inputs)


def test_channel_dropout_zeroes_whole_channels_as_torch() -> None:
    ag.manual_seed(0)
    for fn, shape, channel_dims in ((F.dropout1d, (4, 5, 6), 2), (F.dropout1d, (5, 6), 1), (F.dropout2d, (3, 4, 2, 5), 2),
                                    (F.dropout3d, (3, 4, 2, 2, 3), 2), (F.dropout3d, (4, 2, 2, 3), 1)):
        y = fn(ag.ones(*shape), 0.5).numpy()
        per_channel = y.reshape(*shape[:channel_dims], -1)
        assert ((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)).all(), (fn, shape)
        assert fn(ag.ones(*shape), 0.5, training=False).numpy().min() == 1.0
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d and assuming that channel-wise 1D"):
        y = F.dropout2d(ag.ones(3, 4, 5), 0.5).numpy()  # read as (N, C, L), as torch
    assert ((y == 0).all(-1) | (y == 2.0).all(-1)).all()
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d, which is deprecated"):
        F.dropout3d(ag.ones(3, 4), 0.5)


def test_deprecated_upsample_names_warn_and_interpolate() -> None:
    x = ag.randn(1, 2, 3, 3)
    with pytest.warns(UserWarning, match=r"`nn.functional.upsample_bilinear` is deprecated"):
        got = F.upsample_bilinear(x, scale_factor=2)
    want = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
