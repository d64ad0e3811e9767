"""Reference cases for aiograd.nn against torch.nn, run by tests/test_nn_reference.py.

Each case is written once against a namespace ``ns`` (``ns.F`` is torch.nn.functional
or aiograd.nn.functional, ``ns.nn`` torch.nn or aiograd.nn, ``ns.tensor`` makes a
tensor) so the very same code runs on both libraries. Inputs come from numpy, seeded
by the case's name, so only torch's results are stored: the output and the gradient
of ``sum(output * g)`` for a seeded ``g`` with respect to each input that requires
grad and, for a module, each parameter (and the module's torch state_dict, which the
aiograd module loads). The test suite never imports torch: the results live in
tests/data/nn_reference.npz, which this file regenerates (torch needed):

    python tests/nn_reference.py
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "nn_reference.npz"


@dataclass
class Case:
    """``run(ns, *inputs)`` on inputs made from ``shapes`` by ``sample``; ``grad``: which inputs require grad
    (default: all float ones); ``module``: ``module(ns)`` builds a module passed to ``run`` first."""

    run: Callable[..., Any]
    shapes: tuple[Any, ...]
    sample: str = "normal"  #: normal, unit (in (0.05, 0.95)), distinct (no ties), index:N (ints < N), bool
    grad: tuple[int, ...] | None = None
    module: Callable[[Any], Any] | None = None
    atol: float = 1e-10
    extra: dict[str, Any] = field(default_factory=dict)


def inputs(name: str, case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    out = []
    for i, s in enumerate(case.shapes):
        kind = case.sample if not isinstance(s, tuple) or not s or not isinstance(s[0], str) else s[0]
        shape = s if not (isinstance(s, tuple) and s and isinstance(s[0], str)) else s[1]
        if kind == "normal":
            out.append(rng.standard_normal(shape))
        elif kind == "unit":
            out.append(rng.uniform(0.05, 0.95, shape))
        elif kind == "distinct":
            n = int(np.prod(shape))
            out.append(((rng.permutation(n) - n / 2) * 0.1 + rng.uniform(0, 0.01, n)).reshape(shape))
        elif kind.startswith("index:"):
            out.append(rng.integers(0, int(kind[6:]), shape))
        elif kind == "bool":
            out.append(rng.uniform(0, 1, shape) > 0.3)
        else:  # pragma: no cover - a case's typo
            raise ValueError(kind)
    return out


def upstream(name: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(zlib.crc32(("g" + name).encode())).standard_normal(shape)


def _act(fn: str, **kw: Any) -> Case:
    return Case(lambda ns, x: getattr(ns.F, fn)(x * 3, **kw), ((3, 4),))


def _mod(build: Callable[[Any], Any], *shapes: Any, sample: str = "normal", run: Any = None, **kw: Any) -> Case:
    return Case(run or (lambda ns, m, *x: m(*x)), shapes, sample=sample, module=build, **kw)


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, tuple) else out


CASES: dict[str, Case] = {
    # ----- activations
    **{f"F.{n}": _act(n) for n in (
        "silu", "mish", "leaky_relu", "elu", "selu", "celu", "hardtanh", "relu6", "hardsigmoid", "hardswish",
        "logsigmoid", "softsign", "tanhshrink", "hardshrink", "softshrink", "softplus", "gelu")},
    "F.leaky_relu slope": _act("leaky_relu", negative_slope=0.2),
    "F.elu alpha": _act("elu", alpha=0.5),
    "F.celu alpha": _act("celu", alpha=2.0),
    "F.hardtanh range": _act("hardtanh", min_val=-2.0, max_val=0.5),
    "F.threshold": _act("threshold", threshold=0.1, value=2.0),
    "F.softmin": _act("softmin", dim=1),
    "F.glu": Case(lambda ns, x: ns.F.glu(x, 1), ((3, 4, 2),)),
    "F.prelu": Case(lambda ns, x, w: ns.F.prelu(x, w), ((2, 3, 4), (3,))),
    # ----- losses
    "F.mse_loss": Case(lambda ns, x, t: ns.F.mse_loss(x, t), ((3, 4), (3, 4))),
    "F.mse_loss weight": Case(lambda ns, x, t, w: ns.F.mse_loss(x, t, weight=w.abs()), ((3, 4), (3, 4), (3, 4)),
                              grad=(0, 1)),
    "F.l1_loss none": Case(lambda ns, x, t: ns.F.l1_loss(x, t, reduction="none"), ((3, 4), (3, 4))),
    "F.smooth_l1_loss": Case(lambda ns, x, t: ns.F.smooth_l1_loss(x, t, beta=0.5), ((3, 4), (3, 4))),
    "F.huber_loss sum": Case(lambda ns, x, t: ns.F.huber_loss(x, t, reduction="sum", delta=0.7), ((3, 4), (3, 4))),
    "F.binary_cross_entropy": Case(lambda ns, x, t, w: ns.F.binary_cross_entropy(x, t, w), ((3, 4), (3, 4), (4,)),
                                   sample="unit", grad=(0, 1)),
    "F.binary_cross_entropy_with_logits": Case(
        lambda ns, x, t, pw: ns.F.binary_cross_entropy_with_logits(x * 3, t.sigmoid(), pos_weight=pw.abs()),
        ((3, 4), (3, 4), (4,)), grad=(0, 1)),
    "F.kl_div batchmean": Case(lambda ns, x, t: ns.F.kl_div(x.log_softmax(1), t.softmax(1), reduction="batchmean"),
                               ((3, 4), (3, 4))),
    "F.kl_div log_target": Case(lambda ns, x, t: ns.F.kl_div(x, t, reduction="sum", log_target=True),
                                ((3, 4), (3, 4))),
    "F.cross_entropy smoothing": Case(
        lambda ns, x, t: ns.F.cross_entropy(x, t, label_smoothing=0.1), ((4, 5), ("index:5", (4,)))),
    "F.cosine_similarity": Case(lambda ns, a, b: ns.F.cosine_similarity(a, b, dim=-1), ((3, 4), (4,))),
    "F.pairwise_distance": Case(lambda ns, a, b: ns.F.pairwise_distance(a, b, p=1.5), ((3, 4), (3, 4))),
    "F.normalize": Case(lambda ns, x: ns.F.normalize(x, p=3.0, dim=0), ((3, 4),)),
    # margin, embedding and likelihood losses (targets of 1 / -1 as signs)
    "F.margin_ranking_loss": Case(lambda ns, a, b, t: ns.F.margin_ranking_loss(a, b, t.sign(), margin=0.3),
                                  ((3, 4), (3, 4), (3, 4)), grad=(0, 1)),
    "F.hinge_embedding_loss none": Case(
        lambda ns, x, t: ns.F.hinge_embedding_loss(x, t.sign(), margin=0.7, reduction="none"), ((3, 4), (3, 4)),
        grad=(0,)),
    "F.soft_margin_loss sum": Case(lambda ns, x, t: ns.F.soft_margin_loss(x, t.sign(), reduction="sum"),
                                   ((3, 4), (3, 4)), grad=(0,)),
    "F.cosine_embedding_loss": Case(lambda ns, a, b, t: ns.F.cosine_embedding_loss(a, b, t.sign(), margin=0.2),
                                    ((4, 5), (4, 5), (4,)), grad=(0, 1)),
    "F.triplet_margin_loss swap p=3": Case(
        lambda ns, a, p, n: ns.F.triplet_margin_loss(a, p, n, margin=2.0, p=3, swap=True), ((4, 5), (4, 5), (4, 5))),
    "F.multilabel_soft_margin_loss weight": Case(
        lambda ns, x, t, w: ns.F.multilabel_soft_margin_loss(x, (t > 0).double(), w.abs()), ((4, 5), (4, 5), (5,)),
        grad=(0,)),
    "F.poisson_nll_loss full": Case(
        lambda ns, x, t: ns.F.poisson_nll_loss(x, t.abs() * 3, full=True), ((3, 4), (3, 4)), grad=(0,)),
    "F.poisson_nll_loss rates": Case(
        lambda ns, x, t: ns.F.poisson_nll_loss(x.abs() + 0.1, t.abs() * 3, log_input=False, reduction="sum"),
        ((3, 4), (3, 4)), grad=(0,)),
    "F.gaussian_nll_loss": Case(
        lambda ns, x, t, v: ns.F.gaussian_nll_loss(x, t, v.abs(), full=True), ((4, 3), (4, 3), (4, 1))),
    "F.gaussian_nll_loss var per row": Case(
        lambda ns, x, t, v: ns.F.gaussian_nll_loss(x, t, v * v, reduction="none"), ((4, 3), (4, 3), (4,))),
    # reshuffling, bilinear, pdist, deprecated resampling names
    "F.pixel_shuffle": Case(lambda ns, x: ns.F.pixel_shuffle(x, 2), ((2, 8, 3, 2),)),
    "F.pixel_unshuffle": Case(lambda ns, x: ns.F.pixel_unshuffle(x, 3), ((2, 6, 3),)),
    "F.bilinear": Case(lambda ns, a, b, w, c: ns.F.bilinear(a, b, w, c), ((2, 3, 4), (2, 3, 5), (6, 4, 5), (6,))),
    "F.pdist p=1.5": Case(lambda ns, x: ns.F.pdist(x, 1.5), ((5, 3),)),
    "F.adaptive_avg_pool3d": Case(lambda ns, x: ns.F.adaptive_avg_pool3d(x, (2, 3, 2)), ((2, 2, 4, 5, 3),)),
    # ----- convolution, pooling, resampling, padding
    "F.conv1d": Case(lambda ns, x, w, b: ns.F.conv1d(x, w, b, stride=2, padding=1, dilation=2),
                     ((2, 3, 9), (4, 3, 3), (4,))),
    "F.conv2d groups": Case(lambda ns, x, w, b: ns.F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2),
                            ((2, 4, 6, 5), (6, 2, 3, 2), (6,))),
    "F.conv_transpose1d": Case(lambda ns, x, w: ns.F.conv_transpose1d(x, w, stride=3, padding=1, output_padding=2),
                               ((2, 3, 5), (3, 2, 3))),
    "F.conv_transpose2d": Case(lambda ns, x, w, b: ns.F.conv_transpose2d(x, w, b, stride=2, padding=1, groups=2,
                                                                         dilation=(1, 2), output_padding=1),
                               ((2, 4, 3, 4), (4, 3, 3, 2), (6,))),
    "F.unfold": Case(lambda ns, x: ns.F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=2), ((2, 3, 6, 5),)),
    "F.fold": Case(lambda ns, x: ns.F.fold(x, (5, 6), (2, 3), stride=(1, 2), padding=(1, 0)), ((2, 24, 12),)),
    "F.max_pool1d": Case(lambda ns, x: ns.F.max_pool1d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
                         ((2, 3, 10),), sample="distinct"),
    "F.max_pool2d": Case(lambda ns, x: ns.F.max_pool2d(x, (3, 2), (2, 1), (1, 0), dilation=(1, 2)),
                         ((2, 3, 7, 6),), sample="distinct"),
    "F.avg_pool1d": Case(lambda ns, x: ns.F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                         ((2, 3, 10),)),
    "F.avg_pool2d": Case(lambda ns, x: ns.F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), ((2, 3, 7, 6),)),
    "F.avg_pool2d divisor": Case(lambda ns, x: ns.F.avg_pool2d(x, 2, divisor_override=3), ((2, 3, 4, 6),)),
    "F.adaptive_avg_pool1d": Case(lambda ns, x: ns.F.adaptive_avg_pool1d(x, 4), ((2, 3, 10),)),
    "F.adaptive_avg_pool2d": Case(lambda ns, x: ns.F.adaptive_avg_pool2d(x, (3, None)), ((2, 3, 7, 6),)),
    "F.adaptive_max_pool1d": Case(lambda ns, x: ns.F.adaptive_max_pool1d(x, 4, return_indices=True), ((2, 3, 10),),
                                  sample="distinct"),
    "F.adaptive_max_pool2d": Case(lambda ns, x: ns.F.adaptive_max_pool2d(x, (3, 4)), ((2, 3, 7, 6),),
                                  sample="distinct"),
    "F.interpolate nearest": Case(lambda ns, x: ns.F.interpolate(x, scale_factor=(1.5, 0.7)), ((1, 2, 5, 6),)),
    "F.interpolate nearest-exact": Case(lambda ns, x: ns.F.interpolate(x, size=(7, 4), mode="nearest-exact"),
                                        ((1, 2, 5, 6),)),
    "F.interpolate bilinear": Case(lambda ns, x: ns.F.interpolate(x, size=(7, 4), mode="bilinear"), ((1, 2, 5, 6),)),
    "F.interpolate bilinear corners": Case(
        lambda ns, x: ns.F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=True), ((1, 2, 5, 6),)),
    "F.interpolate bicubic": Case(lambda ns, x: ns.F.interpolate(x, size=(8, 3), mode="bicubic"), ((1, 2, 5, 6),)),
    "F.interpolate linear": Case(lambda ns, x: ns.F.interpolate(x, scale_factor=2.5, mode="linear"), ((2, 3, 5),)),
    "F.interpolate trilinear": Case(lambda ns, x: ns.F.interpolate(x, size=(3, 5, 2), mode="trilinear"),
                                    ((1, 2, 2, 3, 4),)),
    "F.pad constant": Case(lambda ns, x: ns.F.pad(x, (1, -1, 2, 0, 1, 1), value=0.5), ((2, 3, 4),)),
    "F.pad reflect": Case(lambda ns, x: ns.F.pad(x, (2, 1, 0, 3), mode="reflect"), ((2, 3, 4, 5),)),
    "F.pad replicate": Case(lambda ns, x: ns.F.pad(x, (2, 1, 1, 1, 3, 0), mode="replicate"), ((1, 2, 3, 4, 2),)),
    "F.pad circular": Case(lambda ns, x: ns.F.pad(x, (-1, 2, 3, 1), mode="circular"), ((2, 3, 4, 5),)),
    # ----- normalization, embedding, attention
    "F.batch_norm": Case(lambda ns, x, w, b: ns.F.batch_norm(x, None, None, w, b, training=True),
                         ((4, 3, 2, 2), (3,), (3,))),
    "F.group_norm": Case(lambda ns, x, w, b: ns.F.group_norm(x, 2, w, b), ((2, 4, 3), (4,), (4,))),
    "F.instance_norm": Case(lambda ns, x, w, b: ns.F.instance_norm(x, weight=w, bias=b), ((2, 3, 5), (3,), (3,))),
    "F.layer_norm": Case(lambda ns, x, w, b: ns.F.layer_norm(x, (3, 2), w, b), ((4, 3, 2), (3, 2), (3, 2))),
    "F.rms_norm": Case(lambda ns, x, w: ns.F.rms_norm(x, (3,), w, eps=1e-3), ((4, 3), (3,))),
    "F.embedding": Case(lambda ns, i, w: ns.F.embedding(i, w, padding_idx=2, scale_grad_by_freq=True),
                        (("index:6", (3, 4)), (6, 3))),
    "F.scaled_dot_product_attention": Case(
        lambda ns, q, k, v, m: ns.F.scaled_dot_product_attention(q, k, v, m), ((2, 3, 4, 5), (2, 3, 6, 5),
                                                                              (2, 3, 6, 7), (4, 6))),
    "F.scaled_dot_product_attention causal": Case(
        lambda ns, q, k, v: ns.F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
        ((2, 4, 5), (2, 4, 5), (2, 4, 3))),
    # ----- modules
    "nn.Conv2d reflect": _mod(lambda ns: ns.nn.Conv2d(3, 4, 3, padding="same", padding_mode="reflect",
                                                      dtype=ns.float64), (2, 3, 5, 6)),
    "nn.ConvTranspose2d output_size": _mod(lambda ns: ns.nn.ConvTranspose2d(3, 2, 3, stride=2, dtype=ns.float64),
                                           (2, 3, 4, 4), run=lambda ns, m, x: m(x, output_size=(10, 10))),
    "nn.BatchNorm1d": _mod(lambda ns: ns.nn.BatchNorm1d(3, dtype=ns.float64), (5, 3)),
    "nn.GroupNorm": _mod(lambda ns: ns.nn.GroupNorm(2, 4, dtype=ns.float64), (2, 4, 3)),
    "nn.RMSNorm": _mod(lambda ns: ns.nn.RMSNorm(4, dtype=ns.float64), (3, 4)),
    "nn.PReLU": _mod(lambda ns: ns.nn.PReLU(3, dtype=ns.float64), (2, 3, 4)),
    "nn.MultiheadAttention kdim vdim": _mod(
        lambda ns: ns.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True,
                                            dtype=ns.float64),
        (4, 2, 8), (5, 2, 3), (5, 2, 5), run=lambda ns, m, q, k, v: m(q, k, v, average_attn_weights=False)[1]),
    "nn.MultiheadAttention batch_first masks": _mod(
        lambda ns: ns.nn.MultiheadAttention(8, 2, batch_first=True, dtype=ns.float64), (2, 5, 8), ("bool", (2, 5)),
        run=lambda ns, m, x, kpm: m(x, x, x, key_padding_mask=kpm, attn_mask=ns.causal(5), need_weights=False)[0]),
    "nn.TransformerEncoderLayer": _mod(
        lambda ns: ns.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype=ns.float64), (5, 2, 8),
        run=lambda ns, m, x: m(x, src_mask=ns.causal(5), is_causal=True)),
    "nn.TransformerEncoderLayer norm_first gelu": _mod(
        lambda ns: ns.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True,
                                                 batch_first=True, dtype=ns.float64), (2, 5, 8)),
    "nn.TransformerDecoderLayer": _mod(
        lambda ns: ns.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True, dtype=ns.float64),
        (2, 4, 8), (2, 6, 8), run=lambda ns, m, t, mem: m(t, mem, tgt_mask=ns.causal(4))),
    "nn.Bilinear": _mod(lambda ns: ns.nn.Bilinear(3, 4, 5, dtype=ns.float64), (2, 3), (2, 4)),
    "nn.PixelShuffle": _mod(lambda ns: ns.nn.PixelShuffle(2), (1, 4, 2, 3)),
    "nn.UpsamplingBilinear2d": _mod(lambda ns: ns.nn.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 3)),
    "nn.TripletMarginLoss": _mod(lambda ns: ns.nn.TripletMarginLoss(margin=1.5), (4, 5), (4, 5), (4, 5)),
    "nn.GaussianNLLLoss": _mod(lambda ns: ns.nn.GaussianNLLLoss(full=True), (4, 3), (4, 3), (4, 3),
                               run=lambda ns, m, x, t, v: m(x, t, v.abs())),
    "nn.TransformerEncoder": _mod(
        lambda ns: ns.nn.TransformerEncoder(ns.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype=ns.float64),
                                            2, norm=ns.nn.LayerNorm(8, dtype=ns.float64),
                                            **ns.encoder_kwargs), (5, 2, 8),
        run=lambda ns, m, x: m(x, mask=ns.causal(5))),
}


class Namespace:
    """What a case sees of a library: F, nn, float64, causal(n) (torch's float causal mask)."""

    def __init__(self, F: Any, nn: Any, float64: Any, tensor: Callable[..., Any], encoder_kwargs: dict[str, Any]):
        self.F, self.nn, self.float64, self.tensor, self.encoder_kwargs = F, nn, float64, tensor, encoder_kwargs

    def causal(self, n: int) -> Any:
        return self.tensor(np.triu(np.full((n, n), -np.inf), 1), False)


def _torch_results() -> dict[str, np.ndarray]:  # pragma: no cover - run by hand, with torch installed
    import torch

    ns = Namespace(torch.nn.functional, torch.nn, torch.float64,
                   lambda a, rg: torch.tensor(a, requires_grad=rg), {"enable_nested_tensor": False})
    torch.set_default_dtype(torch.float64)
    out: dict[str, np.ndarray] = {}
    for name, case in CASES.items():
        torch.manual_seed(0)
        arrays = inputs(name, case)
        grad = case.grad if case.grad is not None else tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
        ts = [ns.tensor(a, i in grad) for i, a in enumerate(arrays)]
        params: list[tuple[str, Any]] = []
        if case.module is not None:
            m = case.module(ns)
            for k, v in m.state_dict().items():
                out[f"{name}/state/{k}"] = v.detach().numpy()
            params = list(m.named_parameters())
            res = case.run(ns, m, *ts)
        else:
            res = case.run(ns, *ts)
        if isinstance(res, tuple):
            for j, r in enumerate(res[1:], 1):
                out[f"{name}/out{j}"] = r.detach().numpy()
        y = _first(res)
        out[f"{name}/out"] = y.detach().numpy()
        wrt = [ts[i] for i in grad] + [p for _, p in params]
        gs = torch.autograd.grad(y, wrt, torch.tensor(upstream(name, tuple(y.shape))), allow_unused=True)
        for i, g in zip(grad, gs):
            out[f"{name}/grad{i}"] = g.numpy() if g is not None else np.zeros(arrays[i].shape)
        for (pname, p), g in zip(params, gs[len(grad):]):
            out[f"{name}/pgrad/{pname}"] = g.numpy() if g is not None else np.zeros(tuple(p.shape))
    return out


if __name__ == "__main__":  # pragma: no cover
    results = _torch_results()
    DATA.parent.mkdir(exist_ok=True)
    np.savez_compressed(DATA, **results)
    print(f"wrote {len(results)} arrays to {DATA}")
