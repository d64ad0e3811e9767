"""aiograd.optim's optimizers against torch 2.13: update values, 0-d and complex parameters, the keywords
torch accepts or refuses, and the Optimizer base class (groups, names, hooks, state_dict, async closures).

The expected values were computed with torch 2.13 (float64, the same parameters and gradients) and are
written out here: the test suite does not import torch.
"""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import aiograd as ag
from aiograd import nn, optim

P0 = [1.0, -2.0, 0.5]
Q0 = 0.3
GRADS = [[0.5, -1.0, 2.0], [-0.25, 0.75, 1.0], [1.5, 0.1, -0.3], [-0.5, 0.2, 0.4], [0.3, -0.6, -1.2], [1.0, 1.0, 0.1]]
QGRADS = [0.7, -0.3, 1.1, 0.2, -0.9, 0.4]
OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]

# After six steps of torch.optim.<name>(params=[p (3,), q (0-d)], **config) with the gradients above:
# [p..., q]. A config value "T0.5" stands for a 0-d Tensor holding 0.5.
TORCH_VALUES = [
    ('SGD', {}, [0.9974500000000001, -2.0004500000000003, 0.498, 0.29880000000000007]),
    ('SGD', {'lr': 0.1}, [0.745, -2.045, 0.3, 0.18]),
    ('SGD', {'lr': 'T0.05'}, [0.8724999999999999, -2.0225, 0.4, 0.24000000000000002]),
    ('SGD', {'lr': 0.1, 'weight_decay': 0.5}, [0.50478425, -1.5235174062500003, 0.22496038281249997, 0.12393683906249998]),
    ('SGD', {'lr': 0.1, 'momentum': 0.9}, [0.330748, -1.9131635, -0.6338580000000001, -0.20662830000000015]),
    ('SGD', {'lr': 0.1, 'weight_decay': 0.1, 'maximize': True}, [1.191254601646, -1.836109613042, 0.6582927156805, 0.39743035801330007]),
    ('SGD', {'lr': 0.1, 'momentum': 0.9, 'dampening': 0.5}, [0.5482342499999999, -1.72230225, -0.5354880000000001, -0.11730980000000002]),
    ('SGD', {'lr': 0.1, 'momentum': 0.9, 'weight_decay': 0.1}, [0.18001901045599994, -1.582674121162, -0.6492013750045003, -0.23403132035770005]),
    ('SGD', {'lr': 0.1, 'momentum': 0.9, 'nesterov': True, 'weight_decay': 0.1}, [-0.023173603205349252, -1.5726104516895492, -0.6973935445974067, -0.29257271495840503]),
    ('SGD', {'lr': 0.1, 'momentum': 0.5, 'nesterov': True, 'maximize': True}, [1.449375, -1.9489062499999996, 0.9156249999999998, 0.5329687499999999]),
    ('Adam', {}, [0.9967712764378964, -1.9989765209896657, 0.4964327868342145, 0.2970046732326156]),
    ('Adam', {'lr': 0.01}, [0.9677127643789643, -1.9897652098966603, 0.4643278683421458, 0.27004673232615584]),
    ('Adam', {'lr': 0.1, 'weight_decay': 0.1}, [0.6294326501634283, -1.7714136894817873, 0.1358118533502426, -0.009357654042835312]),
    ('Adam', {'lr': 0.1, 'weight_decay': 0.1, 'maximize': True}, [1.2519133833425287, -1.9626608171411215, 0.8367893651124233, 0.5735498984746881]),
    ('Adam', {'lr': 0.1, 'weight_decay': 0.1, 'amsgrad': True}, [0.6294326501634283, -1.7714227622456475, 0.1358118533502426, -0.009357654042835312]),
    ('Adam', {'lr': 0.1, 'weight_decay': 0.1, 'decoupled_weight_decay': True}, [0.6276360256385344, -1.785939110966278, 0.12587584882734662, -0.007549742575966696]),
    ('Adam', {'lr': 'T0.1', 'betas': ('T0.8', 'T0.9')}, [0.6830030381622254, -1.9205644473823515, 0.1757930843048973, 0.01900802767491001]),
    ('Adam', {'lr': 0.1, 'eps': 0.5, 'amsgrad': True, 'maximize': True}, [1.1848219076879596, -2.0682415182724414, 0.7659955328248238, 0.4736796872449782]),
    ('AdamW', {}, [0.9967113696031614, -1.9988565782966101, 0.49640290794795705, 0.29698677051451006]),
    ('AdamW', {'lr': 0.1}, [0.6720578957449723, -1.8862240891546573, 0.14148802152525186, -0.0003613043397767135]),
    ('AdamW', {'lr': 0.1, 'weight_decay': 0.5, 'amsgrad': True}, [0.4547062139429138, -1.3924883693539816, 0.06666082389816509, -0.034083176427385245]),
    ('AdamW', {'lr': 0.1, 'maximize': True}, [1.3159720642850152, -2.0898358309053187, 0.8525269584897421, 0.5967702923487731]),
    ('RMSprop', {}, [0.8120872367431868, -1.999594391841979, 0.39395147711499323, 0.17386052447168615]),
    ('RMSprop', {'lr': 0.001}, [0.9812087236743188, -1.999959439184198, 0.48939514771149933, 0.2873860524471686]),
    ('RMSprop', {'weight_decay': 0.1}, [0.7826594252661425, -1.9309229046600858, 0.3869339842534841, 0.16731428584778285]),
    ('RMSprop', {'maximize': True}, [1.187912763256813, -2.000405608158021, 0.6060485228850068, 0.4261394755283138]),
    ('RMSprop', {'weight_decay': 0.1, 'centered': True}, [0.7809897769247813, -1.930258973970254, 0.38605392925168813, 0.1662235593051504]),
    ('RMSprop', {'maximize': True, 'weight_decay': 0.1}, [1.148618855713444, -1.932767250654434, 0.5937113156063482, 0.41166434566874516]),
    ('RMSprop', {'weight_decay': 0.1, 'centered': True, 'momentum': 0.1}, [0.7629385099095896, -1.9180654633582408, 0.3737545926402865, 0.15384649906484563]),
    ('RMSprop', {'weight_decay': 0.1, 'centered': True, 'momentum': 0.1, 'maximize': True}, [1.1607180875415517, -1.932412781844535, 0.6051477657217744, 0.4230813930566008]),
    ('RMSprop', {'lr': 0.1, 'alpha': 0.5, 'momentum': 0.9}, [0.14632706046179556, -1.8638950600875746, -0.3196825014636384, -0.45036191178608176]),
    ('Adagrad', {}, [0.9812601577654734, -1.9999004854636493, 0.4893649818787183, 0.2873876243004495]),
    ('Adagrad', {'weight_decay': 0.1}, [0.9779911902968643, -1.9928584598957861, 0.4884484286144513, 0.28638675075733133]),
    ('Adagrad', {'weight_decay': 0.1, 'maximize': True}, [1.0150886364446121, -1.993363460747683, 0.5096330110971631, 0.3115026074006985]),
    ('Adagrad', {'lr': 0.1}, [0.8126015776547333, -1.9990048546364934, 0.39364981878718325, 0.17387624300449517]),
    ('Adagrad', {'initial_accumulator_value': 0.1, 'weight_decay': 0.1}, [0.9790832871595366, -1.9931241612982014, 0.4885868523798722, 0.28715068210984607]),
    ('Adagrad', {'lr': 0.1, 'lr_decay': 0.5, 'weight_decay': 0.1}, [0.8580366655452304, -1.9210862694711566, 0.38135011417824355, 0.187382660265285]),
    ('Adagrad', {'lr': 'T0.5', 'eps': 0.1}, [0.14864601758878626, -2.0078624292020844, -0.00545737413716145, -0.2666185568120349]),
    ('Adadelta', {}, [0.9914346669770973, -2.0020513727938045, 0.4967827545338158, 0.2954502930281524]),
    ('Adadelta', {'lr': 0.01}, [0.9999143466697711, -2.000020513727938, 0.4999678275453382, 0.29995450293028153]),
    ('Adadelta', {'weight_decay': 0.1}, [0.9902024500018217, -1.9984419591353626, 0.4962929137075549, 0.2949476920311119]),
    ('Adadelta', {'maximize': True}, [1.008565333022903, -1.9979486272061955, 0.5032172454661842, 0.3045497069718476]),
    ('Adadelta', {'weight_decay': 0.1, 'maximize': True}, [1.0072484843868632, -1.994090513096095, 0.5027007705499885, 0.30401115544383395]),
    ('Adadelta', {'rho': 0.95, 'weight_decay': 0.9}, [0.9771218181220462, -1.9804545120890247, 0.4902909674012686, 0.28824084400843036]),
    ('Adadelta', {'lr': 2.0, 'eps': 0.01}, [-0.5341151982743886, -2.3820881029344205, -0.13550783323387783, -0.5442636661828993]),
    ('Adamax', {}, [0.9953677468565731, -1.9979491103344507, 0.49456327310363346, 0.2953118088738979]),
    ('Adamax', {'lr': 0.1}, [0.7683873428286585, -1.8974555167225207, 0.22816365518167203, 0.06559044369489798]),
    ('Adamax', {'weight_decay': 0.1}, [0.9947428718870306, -1.9962885302694762, 0.4944036908095801, 0.2950968728542108]),
    ('Adamax', {'maximize': True}, [1.004632253143427, -2.00205088966555, 0.5054367268963667, 0.30468819112610207]),
    ('Adamax', {'weight_decay': 0.1, 'maximize': True}, [1.0038213785271537, -2.0000881138826307, 0.505266393480445, 0.3044560364530362]),
    ('Adamax', {'lr': 0.1, 'betas': (0.5, 0.6), 'eps': 0.5}, [0.8275541901348353, -1.9931471395987526, 0.28283144082005557, 0.16614823348694321]),
    ('NAdam', {}, [0.9949546576743383, -2.0001050670303386, 0.49726488919144773, 0.2967501330515178]),
    ('NAdam', {'lr': 0.001}, [0.997477328837169, -2.000052533515169, 0.4986324445957239, 0.29837506652575885]),
    ('NAdam', {'momentum_decay': 0.006}, [0.9949550437292496, -2.000104588994398, 0.49726437845487637, 0.2967499623896776]),
    ('NAdam', {'weight_decay': 0.1}, [0.9940978663873886, -1.9980858577497398, 0.49699827563599414, 0.2964652287725939]),
    ('NAdam', {'weight_decay': 0.1, 'momentum_decay': 0.006}, [0.9940982989685081, -1.9980855370237767, 0.4969977984301099, 0.2964650824055452]),
    ('NAdam', {'weight_decay': 0.1, 'momentum_decay': 0.006, 'decoupled_weight_decay': True}, [0.9937582659533292, -1.9977069535311158, 0.49666757708823533, 0.2963927712885999]),
    ('NAdam', {'weight_decay': 0.1, 'maximize': True}, [1.0040804547936708, -1.9979461048487046, 0.5024548078381598, 0.3029502538662352]),
    ('NAdam', {'lr': 0.1, 'betas': (0.5, 0.6)}, [0.7115014452593386, -2.034325236349134, 0.37500632350391105, 0.12888204258926467]),
    ('RAdam', {}, [0.9981705911244015, -1.9988523201078616, 0.4947708226846453, 0.2980803424686266]),
    ('RAdam', {'lr': 0.002}, [0.9963411822488031, -1.9977046402157235, 0.48954164536929057, 0.296160684937253]),
    ('RAdam', {'eps': 1e-06}, [0.9981705913509185, -1.9988523200229484, 0.4947708227455054, 0.2980803425850587]),
    ('RAdam', {'weight_decay': 0.1}, [0.9976688120376791, -1.9978454207874243, 0.4945206173526569, 0.2979296055462394]),
    ('RAdam', {'weight_decay': 0.1, 'decoupled_weight_decay': True}, [0.9975713075310374, -1.9976531565658173, 0.4944728954426859, 0.2979010562873277]),
    ('RAdam', {'weight_decay': 0.1, 'maximize': True}, [1.001326746262936, -2.0001409224953415, 0.5049771432525747, 0.3017683202441895]),
    ('RAdam', {'lr': 0.1, 'betas': (0.5, 0.9)}, [0.8097341774025912, -1.9376102981761922, 0.13337159655499062, 0.1457988875287463]),
]


def _kw(config):
    def conv(v):
        if isinstance(v, str) and v.startswith("T"):
            return ag.tensor(float(v[1:]), dtype=ag.float64)
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        return v

    return {k: conv(v) for k, v in config.items()}


def run(name, config, dtype=ag.float64, p0=P0, q0=Q0, grads=GRADS, qgrads=QGRADS):
    p = nn.Parameter(ag.tensor(p0, dtype=dtype))
    q = nn.Parameter(ag.tensor(q0, dtype=dtype))
    opt = getattr(optim, name)([p, q], **_kw(config))
    for g, qg in zip(grads, qgrads):
        p.grad = ag.tensor(g, dtype=dtype)
        q.grad = ag.tensor(qg, dtype=dtype)
        opt.step()
    return p, q, opt


@pytest.mark.parametrize("name,config,expected", TORCH_VALUES, ids=[f"{n}-{c}" for n, c, _ in TORCH_VALUES])
def test_update_matches_torch(name, config, expected):
    p, q, _ = run(name, config)
    np.testing.assert_allclose(p.detach().numpy(), expected[:3], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(q.item(), expected[3], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name,config,expected", TORCH_VALUES[::4], ids=[f"{n}-{c}" for n, c, _ in TORCH_VALUES[::4]])
def test_float32_update_stays_float32_and_close_to_torch(name, config, expected):
    p, q, opt = run(name, config, dtype=ag.float32)
    assert p.dtype == ag.float32 and q.dtype == ag.float32
    np.testing.assert_allclose(p.detach().numpy(), expected[:3], rtol=2e-5, atol=1e-6)
    for state in opt.state.values():
        for key, value in state.items():
            assert value.dtype == (ag.float32 if key in ("step", "mu_product") else p.dtype), key


# ----- 0-d parameters (issue: SGD's momentum buffer on a 0-d parameter) ---------------------------


@pytest.mark.parametrize("name,config", [(n, c) for n, c, _ in TORCH_VALUES], ids=[f"{n}-{c}" for n, c, _ in TORCH_VALUES])
def test_0d_parameter_updates_as_a_one_element_vector(name, config):
    """Every optimizer, every config: a 0-d parameter moves exactly as the same number in a (1,) vector,
    and its state stays 0-d arrays updated in place (numpy turns 0-d results into scalars)."""
    _, q0d, opt0 = run(name, config, p0=[0.0], grads=[[0.0]] * 6)
    q1 = nn.Parameter(ag.tensor([Q0], dtype=ag.float64))
    opt1 = getattr(optim, name)([q1], **_kw(config))
    for qg in QGRADS:
        q1.grad = ag.tensor([qg], dtype=ag.float64)
        opt1.step()
    assert q0d.shape == ()
    np.testing.assert_allclose(q0d.item(), q1.item(), rtol=1e-14)
    for key, value in opt0.state[q0d].items():
        assert isinstance(value, ag.Tensor) and value.shape == (), key
        assert isinstance(value.numpy(), np.ndarray)


def test_sgd_nesterov_on_0d_parameter_updates_its_momentum_buffer():
    q = nn.Parameter(ag.tensor(0.0, dtype=ag.float64))
    opt = optim.SGD([q], lr=0.1, momentum=0.9, nesterov=True)
    for _ in range(3):
        q.grad = ag.tensor(0.1, dtype=ag.float64)
        opt.step()
    # buf: 0.1, 0.19, 0.271; steps of lr * (g + 0.9 buf): 0.019, 0.0271, 0.03439
    np.testing.assert_allclose(opt.state[q]["momentum_buffer"].item(), 0.271, rtol=1e-14)
    np.testing.assert_allclose(q.item(), -(0.019 + 0.0271 + 0.03439), rtol=1e-14)


# ----- complex parameters: updated as (real, imaginary) pairs, as torch's view_as_real -------------


@pytest.mark.parametrize("name,config", [(n, c) for n, c, _ in TORCH_VALUES[1::3]], ids=[f"{n}-{c}" for n, c, _ in TORCH_VALUES[1::3]])
def test_complex_parameter_updates_as_real_pairs(name, config):
    z0 = np.array([1.0 - 0.5j, 0.25 + 2.0j])
    z = nn.Parameter(ag.tensor(z0))
    r = nn.Parameter(ag.tensor(np.stack([z0.real, z0.imag], axis=-1)))
    zopt = getattr(optim, name)([z], **_kw(config))
    ropt = getattr(optim, name)([r], **_kw(config))
    for g in GRADS[:4]:
        gz = np.array([g[0] + 1j * g[1], g[2] - 1j * g[0]])
        z.grad = ag.tensor(gz)
        r.grad = ag.tensor(np.stack([gz.real, gz.imag], axis=-1))
        zopt.step()
        ropt.step()
    got = z.detach().numpy()
    assert got.dtype == np.complex128
    np.testing.assert_allclose(np.stack([got.real, got.imag], axis=-1), r.detach().numpy(), rtol=1e-13, atol=1e-15)


# ----- defaults and keywords as torch 2.13 ------------------------------------------------------------


def test_defaults_as_torch():
    p = [nn.Parameter(ag.ones(1))]
    assert optim.SGD(p).defaults["lr"] == 1e-3
    assert optim.Adam(p).defaults == dict(
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False, foreach=None,
        capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False)
    assert optim.AdamW(p).defaults["weight_decay"] == 1e-2 and optim.AdamW(p).defaults["decoupled_weight_decay"]
    assert optim.RMSprop(p).defaults == dict(
        lr=1e-2, momentum=0, alpha=0.99, eps=1e-8, centered=False, weight_decay=0, capturable=False, foreach=None,
        maximize=False, differentiable=False)
    assert optim.Adagrad(p).defaults == dict(
        lr=1e-2, lr_decay=0, eps=1e-10, weight_decay=0, initial_accumulator_value=0, foreach=None, maximize=False,
        differentiable=False, fused=None)
    assert optim.Adadelta(p).defaults == dict(
        lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False, capturable=False, foreach=None, differentiable=False)
    assert optim.Adamax(p).defaults == dict(
        lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, maximize=False, differentiable=False,
        capturable=False)
    assert optim.NAdam(p).defaults == dict(
        lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3, decoupled_weight_decay=False,
        maximize=False, foreach=None, capturable=False, differentiable=False)
    assert optim.RAdam(p).defaults == dict(
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False, foreach=None, capturable=False,
        decoupled_weight_decay=False, differentiable=False)
    assert optim.LBFGS(p).defaults == dict(
        lr=1, max_iter=20, max_eval=25, tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100,
        line_search_fn=None)


def test_sgd_without_lr_uses_1e_3():
    p = nn.Parameter(ag.tensor([1.0, 2.0], dtype=ag.float64))
    opt = optim.SGD([p])
    p.grad = ag.tensor([1.0, -1.0], dtype=ag.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.999, 2.001])


@pytest.mark.parametrize("name", OPTIMIZERS + ["LBFGS"])
def test_tensor_lr_is_accepted_and_read_at_each_step(name):
    p = nn.Parameter(ag.tensor([1.0, -2.0], dtype=ag.float64))
    lr = ag.tensor(0.01, dtype=ag.float64)
    opt = getattr(optim, name)([p], lr=lr)
    assert opt.param_groups[0]["lr"] is lr
    ref = nn.Parameter(ag.tensor([1.0, -2.0], dtype=ag.float64))
    ref_opt = getattr(optim, name)([ref], lr=0.01)
    for o, x in ((opt, p), (ref_opt, ref)):
        def closure(o=o, x=x):
            o.zero_grad()
            loss = (x * x).sum()
            loss.backward_sync()
            return loss
        o.step(closure)
    np.testing.assert_allclose(p.detach().numpy(), ref.detach().numpy(), rtol=1e-15)


@pytest.mark.parametrize("name", OPTIMIZERS + ["LBFGS"])
def test_lr_refused_as_torch_refuses_it(name):
    cls = getattr(optim, name)
    p = [nn.Parameter(ag.ones(1))]
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        cls(p, lr=ag.tensor([0.1, 0.1]))
    with pytest.raises(ValueError, match=r"Invalid learning rate: -0\.1"):
        cls(p, lr=ag.tensor(-0.1, dtype=ag.float64))
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        cls(p, lr=-1)
    with pytest.raises(TypeError, match="lr must be a float or a 1-element Tensor, but got str"):
        cls(p, lr="0.1")
    with pytest.raises(TypeError, match="got NoneType"):
        cls(p, lr=None)
    cls(p, lr=ag.tensor([0.1]))  # one element of any shape is fine
    cls(p, lr=np.float32(0.1))
    with pytest.raises(TypeError, match="Tensor lr must be real"):
        cls(p, lr=ag.tensor(0.1 + 0j))


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_tensor_hyperparameter_rules(name):
    cls = getattr(optim, name)
    p = [nn.Parameter(ag.ones(1))]
    with pytest.raises(ValueError, match="lr as a Tensor is not supported for capturable=False and foreach=True"):
        cls(p, lr=ag.tensor(0.01), foreach=True)
    with pytest.raises(ValueError, match="betas must be either both floats or both Tensors"):
        cls(p, betas=(0.9, ag.tensor(0.99)))
    with pytest.raises(ValueError, match=r"betas\[0\] as a Tensor is not supported for capturable=False and foreach=True"):
        cls(p, betas=(ag.tensor(0.9), ag.tensor(0.99)), foreach=True)
    with pytest.raises(ValueError, match=r"Tensor betas\[1\] must be 1-element"):
        cls(p, betas=(ag.tensor(0.9), ag.tensor([0.99, 0.9])))
    opt = cls(p, foreach=True)
    opt.param_groups[0]["lr"] = ag.tensor(0.01)  # set later: torch refuses at step
    p[0].grad = ag.ones(1)
    with pytest.raises(RuntimeError, match="lr as a Tensor is not supported for capturable=False and foreach=True"):
        opt.step()


@pytest.mark.parametrize(
    "name,kw,error,match",
    [
        ("SGD", dict(momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
        ("SGD", dict(weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
        ("SGD", dict(nesterov=True), ValueError, "Nesterov momentum requires a momentum and zero dampening"),
        ("Adam", dict(betas=(1.0, 0.0)), ValueError, "Invalid beta parameter at index 0: 1.0"),
        ("Adam", dict(weight_decay=-1), ValueError, "Invalid weight_decay value: -1"),
        ("Adam", dict(eps=-1), ValueError, "Invalid epsilon value: -1"),
        ("Adamax", dict(betas=(0.0, 1.0)), ValueError, "Invalid beta parameter at index 1: 1.0"),
        ("NAdam", dict(momentum_decay=-0.2), ValueError, "Invalid momentum_decay value: -0.2"),
        ("RAdam", dict(betas=(1.0, 0.0)), ValueError, "Invalid beta parameter at index 0: 1.0"),
        ("RMSprop", dict(momentum=-1.0), ValueError, "Invalid momentum value: -1.0"),
        ("RMSprop", dict(alpha=-1.0), ValueError, "Invalid alpha value: -1.0"),
        ("Adagrad", dict(lr_decay=-0.5), ValueError, "Invalid lr_decay value: -0.5"),
        ("Adagrad", dict(initial_accumulator_value=-1), ValueError, "Invalid initial_accumulator_value value: -1"),
        ("Adadelta", dict(rho=1.1), ValueError, "Invalid rho value: 1.1"),
    ],
)
def test_invalid_hyperparameters(name, kw, error, match):
    with pytest.raises(error, match=match):
        getattr(optim, name)([nn.Parameter(ag.ones(1))], **kw)


HAS_FUSED = {"SGD", "Adam", "AdamW", "Adagrad"}
HAS_CAPTURABLE = {"Adam", "AdamW", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam"}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_implementation_flags_accepted_where_they_change_nothing(name):
    cls = getattr(optim, name)
    results = []
    for flags in ({}, {"foreach": True}, {"foreach": False}, {"fused": True}, {"fused": False}, {"capturable": False},
                  {"differentiable": False}):
        if ("fused" in flags and name not in HAS_FUSED) or ("capturable" in flags and name not in HAS_CAPTURABLE):
            with pytest.raises(TypeError, match="unexpected keyword argument"):
                cls([nn.Parameter(ag.ones(1))], **flags)
            continue
        p = nn.Parameter(ag.tensor([1.0, -2.0], dtype=ag.float64))
        opt = cls([p], **flags)
        assert all(opt.param_groups[0][k] == v for k, v in flags.items())
        for g in GRADS[:3]:
            p.grad = ag.tensor(g[:2], dtype=ag.float64)
            opt.step()
        results.append(p.detach().numpy().copy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_differentiable_and_capturable_are_refused_with_a_reason(name):
    cls = getattr(optim, name)
    p = [nn.Parameter(ag.ones(1))]
    with pytest.raises(RuntimeError, match=r"differentiable=True\) is not supported: .* outside the autograd graph"):
        cls(p, differentiable=True)
    if name in HAS_CAPTURABLE:
        with pytest.raises(RuntimeError, match=r"capturable=True\) is not supported: .*CUDA graph"):
            cls(p, capturable=True)


@pytest.mark.parametrize("name", sorted(HAS_FUSED))
def test_fused_rules_as_torch(name):
    cls = getattr(optim, name)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        cls([nn.Parameter(ag.ones(1))], fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        cls([nn.Parameter(ag.ones(1))], fused=True, differentiable=True)
    z = nn.Parameter(ag.tensor([1.0 + 1.0j]))
    opt = cls([z], fused=True)
    z.grad = ag.tensor([1.0 + 0.0j])
    with pytest.raises(RuntimeError, match="`fused=True` requires all the params to be floating point Tensors"):
        opt.step()


# inspect.signature of torch 2.13's constructors: "*" marks keyword-only, "=" the default
TORCH_SIGNATURES = {
    "SGD": "params lr=0.001 momentum=0 dampening=0 weight_decay=0 nesterov=False *maximize=False *foreach=None *differentiable=False *fused=None",
    "Adam": "params lr=0.001 betas=(0.9, 0.999) eps=1e-08 weight_decay=0 amsgrad=False *foreach=None *maximize=False *capturable=False *differentiable=False *fused=None *decoupled_weight_decay=False",
    "AdamW": "params lr=0.001 betas=(0.9, 0.999) eps=1e-08 weight_decay=0.01 amsgrad=False *maximize=False *foreach=None *capturable=False *differentiable=False *fused=None",
    "RMSprop": "params lr=0.01 alpha=0.99 eps=1e-08 weight_decay=0 momentum=0 centered=False capturable=False foreach=None maximize=False differentiable=False",
    "Adagrad": "params lr=0.01 lr_decay=0 weight_decay=0 initial_accumulator_value=0 eps=1e-10 foreach=None *maximize=False *differentiable=False *fused=None",
    "Adadelta": "params lr=1.0 rho=0.9 eps=1e-06 weight_decay=0 foreach=None *capturable=False *maximize=False *differentiable=False",
    "Adamax": "params lr=0.002 betas=(0.9, 0.999) eps=1e-08 weight_decay=0 foreach=None *maximize=False *differentiable=False *capturable=False",
    "NAdam": "params lr=0.002 betas=(0.9, 0.999) eps=1e-08 weight_decay=0 momentum_decay=0.004 decoupled_weight_decay=False *foreach=None *maximize=False *capturable=False *differentiable=False",
    "RAdam": "params lr=0.001 betas=(0.9, 0.999) eps=1e-08 weight_decay=0 decoupled_weight_decay=False *foreach=None *maximize=False *capturable=False *differentiable=False",
    "LBFGS": "params lr=1 max_iter=20 max_eval=None tolerance_grad=1e-07 tolerance_change=1e-09 history_size=100 line_search_fn=None",
    "lr_scheduler.LambdaLR": "optimizer lr_lambda last_epoch=-1",
    "lr_scheduler.MultiplicativeLR": "optimizer lr_lambda last_epoch=-1",
    "lr_scheduler.StepLR": "optimizer step_size gamma=0.1 last_epoch=-1",
    "lr_scheduler.MultiStepLR": "optimizer milestones gamma=0.1 last_epoch=-1",
    "lr_scheduler.ConstantLR": "optimizer factor=0.3333333333333333 total_iters=5 last_epoch=-1",
    "lr_scheduler.LinearLR": "optimizer start_factor=0.3333333333333333 end_factor=1.0 total_iters=5 last_epoch=-1",
    "lr_scheduler.ExponentialLR": "optimizer gamma last_epoch=-1",
    "lr_scheduler.PolynomialLR": "optimizer total_iters=5 power=1.0 last_epoch=-1",
    "lr_scheduler.CosineAnnealingLR": "optimizer T_max eta_min=0.0 last_epoch=-1",
    "lr_scheduler.SequentialLR": "optimizer schedulers milestones last_epoch=-1",
    "lr_scheduler.ReduceLROnPlateau": "optimizer mode='min' factor=0.1 patience=10 threshold=0.0001 threshold_mode='rel' cooldown=0 min_lr=0 eps=1e-08",
    "lr_scheduler.OneCycleLR": "optimizer max_lr total_steps=None epochs=None steps_per_epoch=None pct_start=0.3 anneal_strategy='cos' cycle_momentum=True base_momentum=0.85 max_momentum=0.95 div_factor=25.0 final_div_factor=10000.0 three_phase=False last_epoch=-1",
}


def _signature(obj):
    import inspect

    out = []
    for p in inspect.signature(obj.__init__).parameters.values():
        if p.name != "self":
            out.append(("*" if p.kind == p.KEYWORD_ONLY else "") + p.name
                       + ("" if p.default is p.empty else "=" + repr(p.default)))
    return " ".join(out)


@pytest.mark.parametrize("name", sorted(TORCH_SIGNATURES))
def test_constructor_signatures_are_torchs(name):
    obj = optim
    for part in name.split("."):
        obj = getattr(obj, part)
    assert _signature(obj) == TORCH_SIGNATURES[name]


def test_public_names():
    assert set(optim.__all__) >= {"Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
                                  "NAdam", "RAdam", "LBFGS", "lr_scheduler"}
    assert all(hasattr(optim, n) for n in optim.__all__)
    assert all(hasattr(optim.lr_scheduler, n) for n in optim.lr_scheduler.__all__)


# ----- the Optimizer base class --------------------------------------------------------------------


def test_step_skips_params_without_grad_and_bumps_version():
    a = nn.Parameter(ag.ones(2))
    b = nn.Parameter(ag.ones(2))
    opt = optim.SGD([a, b], lr=1.0)
    a.grad = ag.ones(2)
    va, vb = a._version, b._version
    opt.step()
    np.testing.assert_array_equal(a.detach().numpy(), [0, 0])
    np.testing.assert_array_equal(b.detach().numpy(), [1, 1])
    assert a._version == va + 1 and b._version == vb
    assert a.dtype == ag.float32
    assert dict(optim.SGD([a], momentum=0.0).state) == {}  # no momentum, no state (as torch)


def test_zero_grad():
    p = nn.Parameter(ag.ones(2))
    opt = optim.Adam([p])
    p.grad = ag.ones(2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), [0, 0])
    opt.zero_grad()
    assert p.grad is None


def test_zero_grad_without_set_to_none_zeroes_grads_with_a_graph_or_read_only():
    """As torch: a gradient with a graph is detached, a read-only one (a broadcast view)
    replaced; each ends all zeros, with no graph and not requiring grad."""
    p = nn.Parameter(ag.ones(2))
    q = nn.Parameter(ag.ones(2))
    (p * p).sum().backward_sync(create_graph=True)
    assert p.grad.grad_fn is not None
    q.grad = ag.ones(1).expand(2)
    assert not q.grad.numpy().flags.writeable
    optim.SGD([p, q], lr=0.1).zero_grad(set_to_none=False)
    for t in (p, q):
        assert t.grad.grad_fn is None and not t.grad.requires_grad
        np.testing.assert_array_equal(t.grad.numpy(), [0, 0])


def test_param_groups_and_add_param_group():
    a, b, c = (nn.Parameter(ag.ones(1)) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9
    opt.add_param_group({"params": c, "lr": 1.0})
    for p in (a, b, c):
        p.grad = ag.ones(1)
    opt.step()
    np.testing.assert_allclose([a.item(), b.item(), c.item()], [0.9, 0.5, 0.0], rtol=1e-6)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    for g in opt.param_groups:
        g["lr"] = 0.0  # a scheduler's way of changing the learning rate
    before = a.item()
    opt.step()
    assert a.item() == before


def test_adagrad_creates_state_at_construction_as_torch():
    p = nn.Parameter(ag.ones(2))
    opt = optim.Adagrad([p], initial_accumulator_value=0.5)
    assert opt.state[p]["step"].item() == 0.0
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), [0.5, 0.5])


def test_constructor_errors():
    p = nn.Parameter(ag.ones(1))
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([p, 3])
    with pytest.raises(TypeError, match="optimizer parameters need to be organized in ordered collections"):
        optim.SGD([{"params": {p}}])
    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization parameter lr"):
        _Custom([p])


class _Custom(optim.Optimizer):
    def __init__(self, params, lr=optim.optimizer.required):
        super().__init__(params, dict(lr=lr))


def test_duplicate_parameters_in_a_group_warn_as_torch():
    p = nn.Parameter(ag.ones(1))
    with pytest.warns(UserWarning, match="a parameter group with duplicate parameters"):
        optim.SGD([p, p])


def test_named_parameters():
    model = nn.Linear(2, 1)
    opt = optim.Adam(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.param_groups[0]["params"] == [model.weight, model.bias]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
    w, b = nn.Parameter(ag.ones(1)), nn.Parameter(ag.ones(1))
    with pytest.raises(ValueError, match="all optimizer params should be with/without names. Some param names are missing"):
        optim.SGD([("w", w), b])
    with pytest.raises(ValueError, match="all optimizer param groups should be with/without names. cannot add param "
                                         "group with names to the optimizer"):
        optim.SGD([{"params": [w], "lr": 1e-2}, {"params": [("b", b)]}])


def test_step_hooks_run_around_step_and_can_change_its_arguments():
    p = nn.Parameter(ag.ones(1))
    opt = optim.SGD([p], lr=0.1)
    calls = []

    def pre(o, args, kwargs):
        calls.append(("pre", o is opt, args, kwargs))
        return (), {"closure": lambda: "from pre hook"}

    h1 = opt.register_step_pre_hook(pre)
    h2 = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", kwargs["closure"]())))
    h3 = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("global pre"))
    h4 = optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global post"))
    try:
        p.grad = ag.ones(1)
        assert opt.step() == "from pre hook"
    finally:
        for h in (h1, h2, h3, h4):
            h.remove()
    assert calls == ["global pre", ("pre", True, (), {}), ("post", "from pre hook"), "global post"]
    opt.step()
    assert len(calls) == 4
    bad = opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\), but got 3"):
        opt.step()
    bad.remove()


def test_step_hooks_run_once_for_a_subclass_that_calls_super_step():
    class Logged(optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    p = nn.Parameter(ag.ones(1))
    opt = Logged([p], lr=0.1)
    seen = []
    opt.register_step_post_hook(lambda *a: seen.append(1))
    p.grad = ag.ones(1)
    opt.step()
    assert seen == [1]


def test_state_dict_format_as_torch():
    a, b, c = (nn.Parameter(ag.tensor([1.0, 2.0])) for _ in range(3))
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], amsgrad=True)
    for p in (a, c):
        p.grad = ag.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sorted(sd["state"]) == [0, 2]
    assert list(sd["state"][0]) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    assert sd["state"][0]["step"].dtype == ag.float32 and sd["state"][0]["step"].item() == 1.0
    assert sd["state"][0] is opt.state[a]  # torch hands out the live state, not a copy
    assert "params" in opt.param_groups[0] and sd["param_groups"][0] is not opt.param_groups[0]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_state_dict_round_trip_continues_identically(name):
    # float32: loading casts floating state to the parameter's dtype (all but "step", as torch)
    p1 = nn.Parameter(ag.tensor([1.0, -2.0, 0.5]))
    opt1 = getattr(optim, name)([p1], lr=0.05)
    for g in GRADS[:2]:
        p1.grad = ag.tensor(g)
        opt1.step()
    p2 = nn.Parameter(ag.tensor(p1.detach().numpy().copy()))
    opt2 = getattr(optim, name)([p2], lr=0.0)
    opt2.load_state_dict(pickle.loads(pickle.dumps(opt1.state_dict())))
    assert opt2.param_groups[0]["lr"] == 0.05
    for p, o in ((p1, opt1), (p2, opt2)):
        p.grad = ag.tensor(GRADS[2])
        o.step()
    np.testing.assert_array_equal(p2.detach().numpy(), p1.detach().numpy())
    assert opt2.state[p2] is not opt1.state[p1]


def test_load_state_dict_casts_state_to_the_parameter_dtype_but_not_step():
    p64 = nn.Parameter(ag.tensor([1.0, 2.0], dtype=ag.float64))
    opt64 = optim.Adam([p64])
    p64.grad = ag.ones(2, dtype=ag.float64)
    opt64.step()
    p32 = nn.Parameter(ag.tensor([1.0, 2.0]))
    opt32 = optim.Adam([p32])
    opt32.load_state_dict(opt64.state_dict())
    assert opt32.state[p32]["exp_avg"].dtype == ag.float32
    assert opt32.state[p32]["step"].dtype == opt64.state[p64]["step"].dtype
    opt32.state[p32]["exp_avg"].numpy()[...] = 7.0  # a copy: the source is untouched
    assert opt64.state[p64]["exp_avg"].numpy()[0] != 7.0


@pytest.mark.parametrize("name", ["Adam", "NAdam", "Adagrad"])
def test_load_state_dict_with_numbers_for_step_as_older_checkpoints(name):
    p = nn.Parameter(ag.tensor([1.0, 2.0]))
    opt = getattr(optim, name)([p])
    p.grad = ag.ones(2)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    for state in sd["state"].values():
        state["step"] = state["step"].item()
        if "mu_product" in state:
            state["mu_product"] = state["mu_product"].item()
    for group in sd["param_groups"]:
        del group["foreach"], group["differentiable"], group["maximize"]
    p2 = nn.Parameter(ag.tensor(p.detach().numpy().copy()))
    opt2 = getattr(optim, name)([p2])
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["maximize"] is False and opt2.param_groups[0]["foreach"] is None
    assert opt2.state[p2]["step"].dtype == ag.float32
    for o, x in ((opt, p), (opt2, p2)):
        x.grad = ag.ones(2)
        o.step()
    np.testing.assert_array_equal(p2.detach().numpy(), p.detach().numpy())


def test_load_state_dict_errors_and_hooks():
    a, b = nn.Parameter(ag.ones(1)), nn.Parameter(ag.ones(1))
    opt = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt.load_state_dict(optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).state_dict())
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the size"):
        opt.load_state_dict(optim.SGD([a, b], lr=0.1).state_dict())
    seen = []
    opt.register_state_dict_pre_hook(lambda o: seen.append("sd pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: seen.append(("load pre", sd.get("extra"))))
    opt.register_load_state_dict_post_hook(lambda o: seen.append("load post"), prepend=True)
    sd = opt.state_dict()
    assert sd["extra"] == 1
    opt.load_state_dict(sd)
    assert seen == ["sd pre", ("load pre", 1), "load post"]


def test_optimizer_pickles_and_deep_copies():
    p = nn.Parameter(ag.tensor([1.0, 2.0]))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = ag.ones(2)
    opt.step()
    clone = copy.deepcopy(opt)
    assert clone.param_groups[0]["lr"] == 0.1
    restored = pickle.loads(pickle.dumps(opt))
    assert restored.defaults == opt.defaults and restored.register_step_pre_hook(lambda *a: None) is not None


def test_repr():
    assert "lr: 0.1" in repr(optim.SGD([nn.Parameter(ag.ones(1))], lr=0.1))


# ----- async closures ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
async def test_async_closure_step_is_awaited(name):
    w = nn.Parameter(ag.tensor([1.0, -1.0], dtype=ag.float64))
    opt = getattr(optim, name)([w], lr=0.1)
    post = []
    opt.register_step_post_hook(lambda *a: post.append(w.detach().numpy().copy()))

    async def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        await loss.backward()
        return loss

    pending = opt.step(closure)
    assert post == [] and w.grad is None  # nothing ran yet
    loss = await pending
    assert loss.item() == 2.0
    assert len(post) == 1 and post[0][0] < 1.0
    ref = nn.Parameter(ag.tensor([1.0, -1.0], dtype=ag.float64))
    ref_opt = getattr(optim, name)([ref], lr=0.1)
    ref.grad = ag.tensor([2.0, -2.0], dtype=ag.float64)
    ref_opt.step()
    np.testing.assert_array_equal(w.detach().numpy(), ref.detach().numpy())


def test_sync_closure_runs_with_grad_enabled_and_returns_the_loss():
    w = nn.Parameter(ag.tensor([3.0]))
    opt = optim.SGD([w], lr=0.5)

    def closure():
        assert ag.is_grad_enabled()
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward_sync()
        return loss

    with ag.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and w.item() == 0.0


async def test_adam_minimises_a_quadratic_with_await_backward():
    ag.manual_seed(0)
    target = ag.tensor([1.0, -2.0, 3.0])
    w = nn.Parameter(ag.zeros(3))
    opt = optim.Adam([w], lr=0.1)
    for _ in range(300):
        loss = ((w - target) ** 2).sum()
        opt.zero_grad()
        await loss.backward()
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), target.numpy(), atol=1e-2)
    assert math.isfinite(loss.item())
