"""The layers of aiograd.nn added for torch parity (activation.py, conv.py, pooling.py,
normalization.py, loss.py, transformer.py): torch's reprs, parameter names, state_dict
keys and shapes, running statistics, legacy loss keywords, masks and errors. Their values
and gradients against torch are in tests/test_nn_reference.py."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from helpers import rnd, t64

# torch 2.13's reprs of the same constructor calls
REPRS = [
    ("LeakyReLU(0.2, True)", "LeakyReLU(negative_slope=0.2, inplace=True)"),
    ("ELU(0.5)", "ELU(alpha=0.5)"),
    ("SELU(inplace=True)", "SELU(inplace=True)"),
    ("CELU()", "CELU(alpha=1.0)"),
    ("Hardtanh(-2, 2)", "Hardtanh(min_val=-2, max_val=2)"),
    ("ReLU6()", "ReLU6()"),
    ("Hardswish()", "Hardswish()"),
    ("Softmin(1)", "Softmin(dim=1)"),
    ("Threshold(0.1, 20)", "Threshold(threshold=0.1, value=20)"),
    ("GLU()", "GLU(dim=-1)"),
    ("PReLU(3)", "PReLU(num_parameters=3)"),
    ("Softplus(2, 10)", "Softplus(beta=2, threshold=10)"),
    ("Softshrink()", "Softshrink(0.5)"),
    ("Mish()", "Mish()"),
    ("Conv1d(3, 4, 3, stride=2, padding=1, dilation=2, bias=False, padding_mode='reflect')",
     "Conv1d(3, 4, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), bias=False, padding_mode=reflect)"),
    ("Conv2d(2, 4, (3, 2), stride=(2, 1), padding=1, groups=2)",
     "Conv2d(2, 4, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), groups=2)"),
    ("Conv2d(2, 4, 3, padding='same')", "Conv2d(2, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)"),
    ("ConvTranspose2d(3, 4, 3, stride=2, output_padding=1)",
     "ConvTranspose2d(3, 4, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
    ("MaxPool1d(2)", "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    ("AvgPool1d(3)", "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    ("AvgPool2d(3, 2, 1)", "AvgPool2d(kernel_size=3, stride=2, padding=1)"),
    ("AdaptiveAvgPool2d((2, None))", "AdaptiveAvgPool2d(output_size=(2, None))"),
    ("AdaptiveMaxPool1d(2)", "AdaptiveMaxPool1d(output_size=2)"),
    ("Upsample(scale_factor=2)", "Upsample(scale_factor=2.0, mode='nearest')"),
    ("Upsample(size=(3, 4), mode='bilinear', align_corners=True)", "Upsample(size=(3, 4), mode='bilinear')"),
    ("Unfold(2)", "Unfold(kernel_size=2, dilation=1, padding=0, stride=1)"),
    ("Fold((4, 4), 2)", "Fold(output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=1)"),
    ("BatchNorm1d(3)", "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    ("BatchNorm2d(3, momentum=None, affine=False)",
     "BatchNorm2d(3, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"),
    ("GroupNorm(2, 4)", "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"),
    ("RMSNorm(4)", "RMSNorm((4,), eps=None, elementwise_affine=True)"),
    ("InstanceNorm2d(3, affine=True)",
     "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=False)"),
    ("LayerNorm((2, 3), bias=False)", "LayerNorm((2, 3), eps=1e-05, elementwise_affine=True, bias=False)"),
    ("ZeroPad2d(1)", "ZeroPad2d((1, 1, 1, 1))"),
    ("ConstantPad1d((1, 2), 3.5)", "ConstantPad1d(padding=(1, 2), value=3.5)"),
    ("ReflectionPad2d(2)", "ReflectionPad2d((2, 2, 2, 2))"),
    ("BCEWithLogitsLoss()", "BCEWithLogitsLoss()"),
    ("MultiheadAttention(8, 2, bias=False)",
     "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=False)\n)"),
]


@pytest.mark.parametrize("call, want", REPRS, ids=[c for c, _ in REPRS])
def test_repr_is_torchs(call: str, want: str) -> None:
    assert repr(eval("nn." + call)) == want


# torch 2.13's state_dict keys and shapes
STATE = [
    ("BatchNorm1d(3)", [("weight", (3,)), ("bias", (3,)), ("running_mean", (3,)), ("running_var", (3,)),
                        ("num_batches_tracked", ())]),
    ("BatchNorm2d(3, track_running_stats=False)", [("weight", (3,)), ("bias", (3,))]),
    ("InstanceNorm1d(3)", []),
    ("ConvTranspose2d(4, 4, 2, groups=2, bias=False)", [("weight", (4, 2, 2, 2))]),
    ("BCEWithLogitsLoss(pos_weight=ag.ones(3))", [("pos_weight", (3,))]),
    ("MultiheadAttention(8, 2)", [("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)),
                                  ("out_proj.bias", (8,))]),
    ("MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False, add_bias_kv=True)",
     [("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 3)), ("v_proj_weight", (8, 5)), ("bias_k", (1, 1, 8)),
      ("bias_v", (1, 1, 8)), ("out_proj.weight", (8, 8))]),
    ("TransformerDecoderLayer(8, 2, 16)",
     [(f"{a}.{k}", s) for a in ("self_attn", "multihead_attn") for k, s in (
         ("in_proj_weight", (24, 8)), ("in_proj_bias", (24,)), ("out_proj.weight", (8, 8)), ("out_proj.bias", (8,)))]
     + [("linear1.weight", (16, 8)), ("linear1.bias", (16,)), ("linear2.weight", (8, 16)), ("linear2.bias", (8,))]
     + [(f"norm{i}.{k}", (8,)) for i in (1, 2, 3) for k in ("weight", "bias")]),
]


@pytest.mark.parametrize("call, want", STATE, ids=[c for c, _ in STATE])
def test_state_dict_keys_are_torchs(call: str, want: list[tuple[str, tuple[int, ...]]]) -> None:
    m = eval("nn." + call)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == want


def test_transformer_encoder_clones_its_layer() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    keys = list(enc.state_dict())
    assert keys[0] == "layers.0.self_attn.in_proj_weight" and keys[-1] == "norm.bias" and len(keys) == 26
    assert "(0-1): 2 x TransformerEncoderLayer(" in repr(enc)
    w0, w1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert w0 is not w1 and np.array_equal(w0.detach().numpy(), w1.detach().numpy())  # deep copies, as torch


def test_init_follows_torch() -> None:
    ag.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, add_bias_kv=True)
    bound = np.sqrt(6 / (16 + 48))  # xavier_uniform on (3E, E)
    assert np.abs(mha.in_proj_weight.detach().numpy()).max() <= bound
    assert (mha.in_proj_bias.detach().numpy() == 0).all() and (mha.out_proj.bias.detach().numpy() == 0).all()
    bn = nn.BatchNorm2d(3)
    assert (bn.weight.detach().numpy() == 1).all() and (bn.running_var.numpy() == 1).all()
    assert bn.num_batches_tracked.dtype == np.int64
    assert (nn.PReLU(2).weight.detach().numpy() == np.float32(0.25)).all()
    conv = nn.ConvTranspose1d(4, 6, 3, groups=2)
    assert conv.weight.shape == (4, 3, 3) and np.abs(conv.bias.detach().numpy()).max() <= 1 / np.sqrt(9)


# ----- batch norm's running statistics ----------------------------------------------------------------


@pytest.mark.parametrize("momentum", [0.3, None])
def test_batch_norm_running_statistics(momentum: float | None) -> None:
    bn = nn.BatchNorm1d(2, momentum=momentum).double()
    mean, var = np.zeros(2), np.ones(2)
    for step in range(1, 4):
        x = rnd(5, 2, seed=step) * step + step
        bn(t64(x))
        f = momentum if momentum is not None else 1.0 / step  # None: the cumulative average
        mean = (1 - f) * mean + f * x.mean(0)
        var = (1 - f) * var + f * x.var(0, ddof=1)
        assert bn.num_batches_tracked.item() == step
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-12)
    bn.eval()
    x = rnd(3, 2, seed=9)
    want = (x - mean) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(bn(t64(x)).detach().numpy(), want, rtol=1e-10)
    assert bn.num_batches_tracked.item() == 3  # evaluation leaves the statistics alone


def test_batch_norm_without_running_statistics_uses_the_batch_in_eval() -> None:
    bn = nn.BatchNorm2d(2, track_running_stats=False, affine=False).double().eval()
    x = rnd(3, 2, 2, 2)
    want = (x - x.mean((0, 2, 3), keepdims=True)) / np.sqrt(x.var((0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(bn(t64(x)).detach().numpy(), want, rtol=1e-10)


def test_batch_norm_checks_dims_like_torch() -> None:
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(ag.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(ag.zeros(1, 3))


# ----- losses -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls, kwargs, reduction", [
    (nn.L1Loss, {"size_average": False}, "sum"),
    (nn.MSELoss, {"reduce": False}, "none"),
    (nn.BCELoss, {"size_average": True, "reduce": True}, "mean"),
    (nn.CrossEntropyLoss, {"size_average": False}, "sum"),
    (nn.KLDivLoss, {"reduce": False}, "none"),
])
def test_legacy_loss_keywords_map_to_reduction_with_torchs_warning(cls, kwargs, reduction) -> None:
    with pytest.warns(UserWarning, match=f"size_average and reduce args will be deprecated, please use "
                                         f"reduction='{reduction}' instead"):
        loss = cls(**kwargs)
    assert loss.reduction == reduction


def test_legacy_keywords_in_functional_losses() -> None:
    x, t = t64(rnd(2, 3)), t64(rnd(2, 3, seed=1))
    with pytest.warns(UserWarning, match="reduction='sum'"):
        got = F.mse_loss(x, t, size_average=False)
    np.testing.assert_allclose(got.item(), ((x.detach().numpy() - t.detach().numpy()) ** 2).sum())


def test_loss_modules_hold_weights_as_buffers() -> None:
    w = ag.tensor([1.0, 2.0, 0.5])
    loss = nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)
    assert list(loss.state_dict()) == ["weight"]
    x = ag.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]])
    t = ag.tensor([1, 2])
    assert loss(x, t).item() == pytest.approx(F.cross_entropy(x, t, w, label_smoothing=0.1).item())


# ----- attention and transformers -----------------------------------------------------------------


def test_multihead_attention_weights_and_shapes() -> None:
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = ag.randn(3, 5, 8)
    out, w = mha(x, x, x)
    assert out.shape == (3, 5, 8) and w.shape == (3, 5, 5)
    np.testing.assert_allclose(w.detach().numpy().sum(-1), 1, rtol=1e-5)
    out, w = mha(x, x, x, average_attn_weights=False)
    assert w.shape == (3, 2, 5, 5)
    out, w = mha(x, x, x, need_weights=False)
    assert w is None
    out, w = mha(x[0], x[0], x[0])  # unbatched
    assert out.shape == (5, 8) and w.shape == (5, 5)


def test_key_padding_mask_hides_keys() -> None:
    mha = nn.MultiheadAttention(4, 1)
    q, k = ag.randn(2, 1, 4), ag.randn(3, 1, 4)
    kpm = ag.tensor([[False, True, False]])
    _, w = mha(q, k, k, key_padding_mask=kpm)
    assert (w.detach().numpy()[..., 1] == 0).all()


def test_transformer_encoder_layer_causal_mask_means_no_look_ahead() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    x = ag.randn(1, 4, 8)
    y = layer(x, src_mask=mask, is_causal=True).detach().numpy()
    x2 = ag.tensor(np.concatenate([x.numpy()[:, :2], np.random.default_rng(0).standard_normal((1, 2, 8))], 1)
                   .astype(np.float32))
    y2 = layer(x2, src_mask=mask, is_causal=True).detach().numpy()
    np.testing.assert_allclose(y[:, :2], y2[:, :2], rtol=1e-5, atol=1e-6)  # the first two never see the last two


def test_transformer_layers_take_activation_and_reject_unknown_names() -> None:
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation="gelu")
    assert layer.activation is F.gelu
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU())
    assert "(activation): GELU(approximate='none')" in repr(layer)  # a module is a child, as torch
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)


def test_generate_square_subsequent_mask() -> None:
    m = nn.Transformer.generate_square_subsequent_mask(3).numpy()
    assert m.dtype == np.float32
    np.testing.assert_array_equal(m, [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])


# ----- convolution, pooling, activation modules --------------------------------------------------------


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes_pad_first(mode: str) -> None:
    conv = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    x = t64(rnd(1, 2, 4, 5))
    want = F.conv2d(F.pad(x, (2, 2, 1, 1), mode=mode), conv.weight, conv.bias)
    np.testing.assert_allclose(conv(x).detach().numpy(), want.detach().numpy())


def test_conv_module_argument_errors_are_torchs() -> None:
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv1d(3, 4, 2, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 4, 2, stride=2, padding="same")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(3, 4, 2, padding_mode="reflect")
    with pytest.raises(ValueError, match="requested an output size of"):
        nn.ConvTranspose2d(3, 4, 3, stride=2)(ag.zeros(1, 3, 4, 4), output_size=(12, 12))


def test_inplace_activation_modules_write_into_their_input() -> None:
    x = ag.tensor([-1.0, 2.0])
    y = nn.LeakyReLU(0.5, inplace=True)(x)
    assert y is x and x.tolist() == [-0.5, 2.0]
    x = ag.tensor([-1.0, 2.0], requires_grad=True) * 1
    y = nn.ELU(inplace=True)(x)
    assert y is x and y.grad_fn.name() == "EluBackward0"


def test_pooling_and_padding_modules() -> None:
    x = ag.arange(16.0).reshape(1, 1, 4, 4)
    assert nn.MaxPool2d(2)(x).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert nn.AvgPool2d(2)(x).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    assert nn.AdaptiveAvgPool2d(1)(x).item() == 7.5
    out, idx = nn.AdaptiveMaxPool2d((1, 2), return_indices=True)(x)
    assert out.tolist() == [[[[13.0, 15.0]]]] and idx.tolist() == [[[[13, 15]]]]
    assert nn.ZeroPad2d((1, 0, 0, 0))(x).shape == (1, 1, 4, 5)
    assert nn.ReflectionPad1d(2)(ag.tensor([[[1.0, 2.0, 3.0]]])).tolist() == [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]]
    assert nn.Upsample(scale_factor=2)(ag.tensor([[[1.0, 2.0]]])).tolist() == [[[1.0, 1.0, 2.0, 2.0]]]


def test_embedding_module_max_norm_renormalizes_in_place() -> None:
    emb = nn.Embedding(4, 2, max_norm=1.0)
    with ag.no_grad():
        emb.weight.copy_(ag.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0], [1.0, 0.0]]))
    out = emb(ag.tensor([0, 1]))
    np.testing.assert_allclose(out.detach().numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)
    np.testing.assert_allclose(emb.weight.detach().numpy()[2], [6.0, 8.0])  # rows not looked up stay
    assert "max_norm=1.0" in repr(emb)


def test_deepcopy_of_a_transformer_layer_is_independent() -> None:
    layer = nn.TransformerDecoderLayer(8, 2, 16)
    twin = copy.deepcopy(layer)
    with ag.no_grad():
        twin.norm3.weight.fill_(2.0)
    assert (layer.norm3.weight.detach().numpy() == 1).all()


# torch 2.13's reprs and legacy keywords of the modules over the composed functions
MORE_REPRS = [
    ("PixelShuffle(2)", "PixelShuffle(upscale_factor=2)"),
    ("PixelUnshuffle(3)", "PixelUnshuffle(downscale_factor=3)"),
    ("Dropout2d(0.3)", "Dropout2d(p=0.3, inplace=False)"),
    ("CosineSimilarity()", "CosineSimilarity()"),
    ("PairwiseDistance()", "PairwiseDistance()"),
    ("Bilinear(2, 3, 4)", "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"),
    ("UpsamplingNearest2d(scale_factor=2)", "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"),
    ("AdaptiveAvgPool3d(2)", "AdaptiveAvgPool3d(output_size=2)"),
    ("TripletMarginLoss()", "TripletMarginLoss()"),
]


@pytest.mark.parametrize("call, want", MORE_REPRS, ids=[c for c, _ in MORE_REPRS])
def test_more_reprs_are_torchs(call: str, want: str) -> None:
    assert repr(eval("nn." + call)) == want


@pytest.mark.parametrize("cls, kwargs, reduction", [
    (nn.MarginRankingLoss, {"size_average": False}, "sum"),
    (nn.HingeEmbeddingLoss, {"reduce": False}, "none"),
    (nn.SoftMarginLoss, {"size_average": True}, "mean"),
    (nn.CosineEmbeddingLoss, {"reduce": False}, "none"),
    (nn.TripletMarginLoss, {"size_average": False}, "sum"),
    (nn.MultiLabelSoftMarginLoss, {"reduce": False}, "none"),
    (nn.PoissonNLLLoss, {"size_average": False}, "sum"),
])
def test_legacy_keywords_of_the_margin_and_likelihood_losses(cls, kwargs, reduction) -> None:
    with pytest.warns(UserWarning, match=f"please use reduction='{reduction}' instead"):
        assert cls(**kwargs).reduction == reduction


def test_bilinear_shapes_and_channel_dropout_modules() -> None:
    m = nn.Bilinear(3, 4, 5)
    assert [k for k, _ in m.named_parameters()] == ["weight", "bias"] and tuple(m.weight.shape) == (5, 3, 4)
    assert abs(m.weight.detach().numpy()).max() <= 1 / np.sqrt(3)
    assert tuple(m(ag.randn(2, 6, 3), ag.randn(2, 6, 4)).shape) == (2, 6, 5)
    d = nn.Dropout1d(0.5).eval()
    x = ag.randn(2, 3, 4)
    assert d(x) is x
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater than 0, got 0.0 instead"):
        nn.TripletMarginLoss(margin=0.0)
