"""aiograd.linalg and the top-level linear algebra ops: torch's names, errors (messages pinned from
torch 2.13), returned fields, values and gradients at the edges (pinned from torch), batching,
numpy's dispatch. Gradients in general (first and second order over shapes and keywords): the
linalg rows of tests/op_rows.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import aiograd as ag
from helpers import c64, rnd, t64

TORCH_LINALG = {  # torch.linalg's public names (torch 2.13)
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
    "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
    "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
    "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm",
}


def test_names_are_torch_linalgs():
    assert set(ag.linalg.__all__) <= TORCH_LINALG
    assert issubclass(ag.linalg.LinAlgError, RuntimeError)
    assert ag.linalg.matmul is ag.matmul


SING = [[1.0, 2.0], [2.0, 4.0]]
NOT_PD = "The factorization could not be completed because the input is not positive-definite"
ERRORS = [
    (lambda: ag.linalg.inv(c64(SING)), ag.linalg.LinAlgError,
     "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is "
     "singular."),
    (lambda: ag.inverse(c64([np.eye(2), SING])), ag.linalg.LinAlgError,
     "linalg.inv: (Batch element 1): The diagonal element 2 is zero, the inversion could not be completed because "
     "the input matrix is singular."),
    (lambda: ag.linalg.inv(c64(np.zeros((2, 3)))), RuntimeError,
     "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: ag.det(c64([1.0, 2.0])), RuntimeError, "linalg.det: The input tensor A must have at least 2 dimensions."),
    (lambda: ag.slogdet(ag.eye(2, dtype=ag.int64)), RuntimeError,
     "linalg.slogdet: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ag.linalg.inv(ag.eye(2, dtype=ag.float16)), RuntimeError,
     "linalg.inv: Low precision dtypes not supported. Got Half"),
    (lambda: ag.linalg.svd(ag.eye(2, dtype=ag.float16)), NotImplementedError,
     "\"linalg_svd_cpu\" not implemented for 'Half'"),
    (lambda: ag.linalg.solve(c64([np.eye(2), SING]), c64(np.ones((2, 2)))), ag.linalg.LinAlgError,
     "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix is singular."),
    (lambda: ag.linalg.solve(c64(np.eye(3)), c64(np.ones(2))), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x1)"),
    (lambda: ag.linalg.solve(c64(np.eye(3)), c64(np.ones(3)), left=False), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation XA = B (3x3 and 3x1)"),
    (lambda: ag.linalg.solve(c64(np.eye(3)), ag.ones(3)), RuntimeError,
     "linalg.solve: Expected A and B to have the same dtype, but found A of type Double and B of type Float instead"),
    (lambda: ag.linalg.solve(c64(np.ones((2, 3, 3))), c64(np.ones((4, 3, 1)))), RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 0"),
    (lambda: ag.linalg.lstsq(c64(np.ones((4, 3))), c64(np.ones((5, 2)))), RuntimeError,
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    (lambda: ag.linalg.lstsq(c64(np.ones((4, 3))), c64(np.ones((4, 2))), driver="lu"), RuntimeError,
     "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"),
    (lambda: ag.linalg.cholesky(c64([np.eye(3), -np.eye(3)])), ag.linalg.LinAlgError,
     f"linalg.cholesky: (Batch element 1): {NOT_PD} (the leading minor of order 1 is not positive-definite)."),
    (lambda: ag.cholesky(c64([[1.0, 2.0], [2.0, 1.0]])), ag.linalg.LinAlgError,
     f"cholesky: {NOT_PD} (the leading minor of order 2 is not positive-definite)."),
    (lambda: ag.linalg.eigh(c64(np.eye(3)), UPLO="X"), RuntimeError,
     "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda: ag.linalg.eigvalsh(ag.eye(2, dtype=ag.int64)), NotImplementedError,
     "\"linalg_eigh_cpu\" not implemented for 'Long'"),
    (lambda: ag.linalg.qr(c64(np.eye(3)), mode="full"), RuntimeError,
     "qr received unrecognized mode 'full' but expected one of 'reduced' (default), 'r', or 'complete'"),
    (lambda: ag.linalg.svd(c64(np.eye(3)), driver="gesvd"), RuntimeError,
     "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend."),
    (lambda: ag.linalg.matrix_power(c64(np.eye(2)), 1.5), TypeError,
     "linalg_matrix_power(): argument 'n' (position 2) must be int, not float"),
    (lambda: ag.linalg.matrix_power(c64(SING), -1), ag.linalg.LinAlgError,
     "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is "
     "singular."),
    (lambda: ag.linalg.pinv(c64([1.0, 2.0])), RuntimeError,
     "linalg.pinv(Double{[2]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types"),
    (lambda: ag.linalg.cross(c64(np.ones((2, 2))), c64(np.ones((2, 2)))), RuntimeError,
     "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    (lambda: ag.linalg.cross(c64(np.ones((2, 3))), c64(np.ones(3))), RuntimeError,
     "linalg.cross: inputs must have the same number of dimensions."),
    (lambda: ag.cross(c64(np.ones((2, 4))), c64(np.ones((2, 4)))), RuntimeError, "no dimension of size 3 in input"),
    (lambda: ag.linalg.vector_norm(ag.ones(3, dtype=ag.int64)), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: ag.linalg.vector_norm(c64(np.ones(3)), "fro"), TypeError,
     "linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str"),
    (lambda: ag.linalg.vector_norm(c64(np.ones((2, 0))), math.inf, dim=1), RuntimeError,
     "linalg.vector_norm cannot compute the inf norm on the dimension 1because this dimension is empty and the "
     "operation does not have an identity"),
    (lambda: ag.linalg.vector_norm(c64(np.ones(3)), dtype=ag.float32), RuntimeError,
     "linalg.vector_norm: the dtype of the input (Double) should be convertible without narrowing to the specified "
     "dtype (Float)"),
    (lambda: ag.linalg.matrix_norm(c64(np.ones((3, 3))), 3), RuntimeError, "linalg.matrix_norm: Order 3 not supported."),
    (lambda: ag.linalg.matrix_norm(c64(np.ones((3, 3))), dim=(0, -2)), RuntimeError,
     "linalg.matrix_norm: dims must be different. Got (0, 0)"),
    (lambda: ag.linalg.vector_norm(c64(np.ones((0, 3))), -1, dim=(1, -2)), RuntimeError,  # the dim as given
     "linalg.vector_norm cannot compute the -1 norm on the dimension -2because this dimension is empty and the "
     "operation does not have an identity"),
    # torch's order of checks: ord, then A (no float16 where an SVD is needed, even for an empty matrix), then dim
    (lambda: ag.linalg.matrix_norm(c64(np.ones(3)), "foo"), RuntimeError, "linalg.matrix_norm: Order foo not supported."),
    (lambda: ag.linalg.matrix_norm(ag.ones(0, 3, dtype=ag.float16), 2, dim=(0,)), RuntimeError,
     "linalg.matrix_norm: Low precision dtypes not supported. Got Half"),
    (lambda: ag.linalg.matrix_norm(ag.ones(2, 3, dtype=ag.float16), 1, dim=(0,)), RuntimeError,
     "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
    (lambda: ag.linalg.svdvals(c64([np.eye(2), [[np.nan, 1.0], [1.0, 1.0]]])), ag.linalg.LinAlgError,
     "linalg.svd: (Batch element 1): The algorithm failed to converge because the input matrix contained "
     "non-finite values."),
    (lambda: ag.norm(c64([[np.nan, 1.0], [1.0, 1.0]]), "nuc"), ag.linalg.LinAlgError,
     "linalg.svd: The algorithm failed to converge because the input matrix contained non-finite values."),
    (lambda: ag.linalg.norm(c64(np.ones((2, 2, 2))), 2), RuntimeError,
     "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."),
    (lambda: ag.cdist(c64(np.ones((2, 3))), c64(np.ones((2, 4)))), RuntimeError,
     "X1 and X2 must have the same number of columns. X1: 3 X2: 4"),
    (lambda: ag.cdist(c64(np.ones((2, 3))), c64(np.ones((2, 3))), compute_mode="fast"), ValueError,
     "fast is not a valid value for compute_mode"),
    (lambda: ag.linalg.inv([[1.0]]), TypeError, "linalg_inv(): argument 'A' (position 1) must be Tensor, not list"),
    (lambda: ag.linalg.vecdot(c64(np.ones(3)), ag.ones(3)), RuntimeError,
     "linalg.vecdot: Expected x and y to have the same dtype, but found x of type Double and y of type Float instead"),
    (lambda: ag.linalg.multi_dot([c64(np.ones((3, 4))), c64(np.ones((5, 2)))]), RuntimeError,
     "multi_dot(): tensors 0 and 1 with shapes [3, 4] and [5, 2] cannot be multiplied"),
    (lambda: ag.linalg.multi_dot([c64(np.ones((3, 4)))]), RuntimeError,
     "multi_dot(): expected at least 2 tensors but got 1"),
]


@pytest.mark.parametrize("call, kind, message", ERRORS, ids=range(len(ERRORS)))
def test_errors_are_torchs(call, kind, message):
    with pytest.raises(kind, match=f"^{re.escape(message)}$"):
        call()


def test_returned_fields_are_torchs():
    a = c64([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [2.0, 1.0, 1.0]])
    b = c64([[1.0, 0.0], [2.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
    solution = [[-0.6, 0.0], [0.9, 0.0], [1.0, 1.0]]  # torch's, every driver
    r = ag.linalg.lstsq(a, b)  # gelsy: no residuals, no singular values
    np.testing.assert_allclose(r.solution.numpy(), solution, atol=1e-12)
    assert r.residuals.shape == (0,) and r.rank.item() == 3 and r.rank.dtype == np.int64 and r.singular_values.shape == (0,)
    r = ag.linalg.lstsq(a, b, driver="gelsd")
    np.testing.assert_allclose(r.residuals.numpy(), [0.3, 0.0], atol=1e-12)
    np.testing.assert_allclose(r.singular_values.numpy(), [3.3886263725403447, 1.565723326814391, 1.0323380120839067])
    r = ag.linalg.lstsq(a, b, driver="gels")
    assert r.rank.shape == (0,) and r.residuals.shape == (2,)
    r = ag.linalg.lstsq(c64(np.ones((4, 5, 3)) + rnd(4, 5, 3)), c64(rnd(4, 5)), driver="gelss")  # vectors
    assert [tuple(f.shape) for f in r] == [(4, 3), (4, 1), (4,), (4, 3)]
    assert ag.linalg.svd(a)._fields == ("U", "S", "Vh") and ag.svd(a)._fields == ("U", "S", "V")
    assert ag.linalg.qr(a)._fields == ("Q", "R") and ag.linalg.qr(a, mode="r").Q.shape == (0,)
    assert ag.linalg.eigh(a[:3]).eigenvectors.shape == (3, 3) and ag.slogdet(a[:3])._fields == ("sign", "logabsdet")
    # one class each, in aiograd.return_types, with torch's names (torch.return_types.linalg_svd, ...)
    results = {"linalg_svd": ag.linalg.svd(a), "svd": ag.svd(a), "linalg_qr": ag.linalg.qr(a), "qr": ag.qr(a),
               "linalg_eigh": ag.linalg.eigh(a[:3]), "slogdet": ag.slogdet(a[:3]),
               "linalg_slogdet": ag.linalg.slogdet(a[:3]), "linalg_lstsq": r}
    for name, result in results.items():
        assert type(result) is getattr(ag.return_types, name) and type(result).__name__ == name


def test_values_match_torch():
    m = c64([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    norms = {"fro": 5.5901699437494745, "nuc": 7.359543360479589, 2: 5.123475382979799, -2: 2.23606797749979,
             1: 6.0, -1: 1.5, math.inf: 6.0, -math.inf: 5.5}
    for ord, want in norms.items():
        assert ag.linalg.matrix_norm(m, ord).item() == pytest.approx(want, rel=1e-12)
    x, y = c64([[0.0, 1.0], [2.0, 2.0], [-1.0, 3.0]]), c64([[1.0, 1.0], [0.0, 0.0]])
    assert ag.cdist(x, y, 0).tolist() == [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]
    np.testing.assert_allclose(ag.cdist(x, y, 0.5).numpy(), [[1.0, 1.0], [4.0, 8.0], [8.0, 7.464101615137754]])
    s = c64([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(ag.linalg.matrix_exp(s).numpy(), [[13.181507095928312, 14.883943678874822],
                                                                 [14.883943678874822, 28.065450774803118]])
    assert ag.linalg.matrix_norm(c64(np.ones((0, 3))), 2).item() == 0.0  # empty: 0, as torch
    assert ag.det(c64(np.ones((0, 0)))).item() == 1.0
    assert ag.linalg.vector_norm(c64(np.ones((2, 0))), math.inf, dim=0).shape == (0,)  # no empty reduction


def _grad(f, x):
    x = t64(x)
    return ag.grad(f(x), [x])[0].numpy()


def test_gradients_at_the_edges_match_torch():
    x = [0.0, 1.0, -2.0, 2.0]
    norm = ag.linalg.vector_norm
    np.testing.assert_allclose(_grad(lambda t: norm(t, math.inf), x), [0.0, 0.0, -0.5, 0.5])  # ties share
    np.testing.assert_allclose(_grad(lambda t: norm(t, 2), x), [0.0, 1 / 3, -2 / 3, 2 / 3])
    np.testing.assert_allclose(_grad(lambda t: norm(t, 0.5), x), [0.0, 3.82842712474619, -2.707106781186547,
                                                                    2.707106781186547])
    np.testing.assert_allclose(_grad(lambda t: norm(t, -1), x), [0.0, 0.0, 0.0, 0.0])  # the norm is 0
    for ord in (0.5, 1, 2, 3, math.inf, -1):
        np.testing.assert_array_equal(_grad(lambda t: norm(t, ord), [0.0, 0.0]), [0.0, 0.0])
    y = c64([[1.0, 1.0], [0.0, 0.0]])
    pts = [[0.0, 1.0], [2.0, 2.0], [-1.0, 3.0]]
    np.testing.assert_allclose(_grad(lambda t: ag.cdist(t, y, math.inf).sum(), pts), [[-1, 1], [2, 2], [-1, 2]])
    np.testing.assert_allclose(_grad(lambda t: ag.cdist(t, y).sum(), pts),
                               [[-1.0, 1.0], [1.414213562373095, 1.414213562373095],
                                [-1.0233345472033855, 1.6557900792370612]])
    np.testing.assert_allclose(_grad(lambda t: ag.linalg.matrix_exp(t).sum(), [[2.0, 1.0], [1.0, 3.0]]),
                               [[25.769636672206776, 34.35951556294238], [34.35951556294238, 45.245208556274356]])
    # repeated singular values / eigenvalues: nan through the vectors, smooth through the values (as torch)
    assert np.isnan(_grad(lambda t: ag.linalg.svd(t)[0].sum(), np.eye(3))).all()
    assert np.isnan(_grad(lambda t: ag.linalg.eigh(t)[1].sum(), np.eye(3))).all()
    np.testing.assert_allclose(_grad(lambda t: ag.linalg.svdvals(t).sum(), np.eye(3)), np.eye(3))
    np.testing.assert_allclose(_grad(lambda t: ag.linalg.eigvalsh(t).sum(), np.eye(3)), np.eye(3))


def test_det_gradient_is_the_cofactor_matrix_also_where_singular():
    np.testing.assert_allclose(_grad(ag.det, SING), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    a = rnd(2, 3, 3)
    a[1, 2] = a[1, 0] + a[1, 1]  # a batch of one invertible, one singular matrix
    cof = np.stack([np.linalg.det(a[0]) * np.linalg.inv(a[0]).T, _grad(ag.det, a[1])])
    np.testing.assert_allclose(_grad(lambda t: ag.det(t).sum(), a), cof, atol=1e-12)
    assert ag.gradgradcheck(ag.det, (t64(a),))


def test_slogdet_of_a_singular_matrix_has_an_infinite_gradient():
    sign, logabsdet = ag.linalg.slogdet(c64(SING))
    assert sign.item() == 0 and logabsdet.item() == -math.inf
    assert np.isinf(_grad(lambda t: ag.linalg.slogdet(t)[1], SING)).all()
    assert math.isnan(ag.logdet(c64(-np.eye(3))).item()) and ag.logdet(c64(SING)).item() == -math.inf


@pytest.mark.parametrize("mode, message", [
    ("r", "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
          "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."),
    ("complete", "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."),
])
def test_qr_without_a_gradient_raises_at_backward_and_leaves_grad_unchanged(mode, message):
    a = t64(rnd(4, 3))
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        ag.backward_sync(ag.linalg.qr(a, mode=mode).R.sum())
    assert a.grad is None


def test_batches_broadcast_where_torchs_do():
    a, b = c64(rnd(2, 3, 3) + 3 * np.eye(3)), c64(rnd(3))
    assert ag.linalg.solve(a, b).shape == (2, 3)  # a vector broadcast over A's batch
    assert ag.linalg.solve(a, c64(rnd(5, 2, 3, 1))).shape == (5, 2, 3, 1)
    assert ag.linalg.solve(a, c64(rnd(2, 3))).shape == (2, 3)  # B of A's shape without its last dim: vectors
    assert ag.linalg.lstsq(c64(rnd(1, 5, 3)), c64(rnd(4, 5, 2)), driver="gelsd").rank.shape == (1,)
    assert ag.linalg.cross(c64(rnd(1, 3)), c64(rnd(4, 3))).shape == (4, 3)
    assert ag.cdist(c64(rnd(2, 1, 4, 3)), c64(rnd(3, 5, 3))).shape == (2, 3, 4, 5)
    assert ag.linalg.matrix_norm(c64(rnd(2, 3, 4)), "nuc", dim=(0, 2), keepdim=True).shape == (1, 3, 1)
    assert ag.linalg.eigvalsh(c64(np.zeros((0, 2, 2)))).shape == (0, 2)


def test_numpy_functions_dispatch_to_the_ops():
    a = t64(rnd(3, 3) + 3 * np.eye(3))
    assert np.linalg.inv(a).grad_fn.name() == "LinalgInvExBackward0"
    assert np.linalg.det(a).grad_fn.name() == "LinalgDetBackward0"
    assert np.linalg.svd(a, full_matrices=False).S.grad_fn.name() == "LinalgSvdBackward0"
    assert np.linalg.eigh(a).eigenvalues.grad_fn.name() == "LinalgEighBackward0"
    assert np.linalg.solve(a, c64(np.ones(3))).shape == (3,)
    assert np.linalg.norm(a).grad_fn.name() == "LinalgVectorNormBackward0"
    assert np.linalg.matrix_power(a, 2).shape == (3, 3) and np.cross(a, a).shape == (3, 3)


def test_top_level_forms_and_methods():
    a = t64(rnd(3, 3) + 3 * np.eye(3))
    assert a.inverse().grad_fn.name() == "LinalgInvExBackward0" and a.det().grad_fn.name() == "LinalgDetBackward0"
    assert ag.cholesky(a @ a.mT).grad_fn.name() == "CholeskyBackward0" and a.slogdet().logabsdet.grad_fn is not None
    np.testing.assert_allclose(ag.matrix_power(a, -1).detach().numpy(), np.linalg.inv(a.detach().numpy()))
    assert ag.matrix_power(a, 0).tolist() == np.eye(3).tolist()
    u, s, v = ag.svd(a, compute_uv=False)
    assert not u.any().item() and u.shape == (3, 3) and s.grad_fn.name() == "LinalgSvdBackward0"
    np.testing.assert_allclose(ag.pinverse(a).detach().numpy(), np.linalg.inv(a.detach().numpy()), atol=1e-12)


@pytest.mark.parametrize("which", ["solve", "eigh", "cholesky"])
async def test_gradients_on_every_loop(which):
    a = t64(rnd(2, 3, 3, seed=7))
    fns = {
        "solve": lambda t: ag.linalg.solve(t + 3 * c64(np.eye(3)), c64(np.ones(3))),
        "eigh": lambda t: ag.linalg.eigvalsh(t + t.mT),
        "cholesky": lambda t: ag.linalg.cholesky(t @ t.mT + 3 * c64(np.eye(3))),
    }
    assert await ag.gradcheck(fns[which], (a,))
    assert await ag.gradgradcheck(fns[which], (a,))
