"""The examples of issue 9 (examples/distributed_*.py), run against the session cluster.

Each script's ``main(address)`` is what ``python examples/distributed_X.py --address ...``
runs; one test also runs a script as a user would, as a separate process.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import cloudpickle
import pytest

import aiograd.distributed as dist
from _dist_helpers import REPO, assert_all_released, cluster_env

pytestmark = [pytest.mark.distributed]


def example(name: str) -> ModuleType:
    path = REPO / "examples" / f"distributed_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_distributed_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)  # the workers cannot import it
    return module


async def all_released(address: str) -> None:
    await dist.init(address=address)
    try:
        await assert_all_released()
    finally:
        await dist.shutdown()


@pytest.mark.asyncio
async def test_model_parallel_mlp_gradients_equal_the_local_run(dask_cluster: str) -> None:
    result = await example("model_parallel").main(dask_cluster)
    assert result["max_grad_diff"] < 1e-10 and result["max_param_diff"] < 1e-10
    await all_released(dask_cluster)


@pytest.mark.asyncio
async def test_pipeline_driver_worker0_worker1_driver(dask_cluster: str) -> None:
    result = await example("pipeline").main(dask_cluster)
    assert result["max_grad_diff"] < 1e-10 and result["last_loss"] < result["first_loss"]
    await all_released(dask_cluster)


@pytest.mark.asyncio
async def test_data_parallel_digits_reaches_95_percent(dask_cluster: str) -> None:
    result = await example("data_parallel").main(dask_cluster)
    assert result["test_accuracy"] >= 0.95, result
    await all_released(dask_cluster)


def test_a_script_runs_as_a_user_runs_it(dask_cluster: str) -> None:
    script = REPO / "examples" / "distributed_model_parallel.py"
    out = subprocess.run([sys.executable, str(script), "--address", dask_cluster], env=cluster_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "largest gradient difference from the local run" in out.stdout


@pytest.mark.asyncio
async def test_parameter_server_with_synchronous_trainers_equals_one_process(dask_cluster: str) -> None:
    result = await example("parameter_server").main(dask_cluster, n_trainers=1, steps=4, sequential=True)
    assert result["max_param_diff"] < 1e-10, result
    (losses,) = result["losses"]
    assert len(losses) == 4 and losses[-1] < losses[0]
    await all_released(dask_cluster)


@pytest.mark.asyncio
async def test_batch_updating_parameter_server_equals_one_process() -> None:
    """Its own local cluster: a server and two trainers need three workers."""
    result = await example("batch_updates").main(None, n_trainers=2, steps=3)
    assert result["max_param_diff"] < 1e-10, result
    assert [len(x) for x in result["losses"]] == [3, 3]


@pytest.mark.asyncio
async def test_rl_observers_on_workers_agent_on_the_driver_equals_one_process(dask_cluster: str) -> None:
    result = await example("rl").main(dask_cluster, n_observers=2, episodes=3)
    assert result["max_grad_diff"] < 1e-12, result
    assert len(result["mean_rewards"]) == 3
    await all_released(dask_cluster)


@pytest.mark.asyncio
async def test_synchronous_rref_pipeline_equals_one_process(dask_cluster: str) -> None:
    result = await example("pipeline_sync").main(dask_cluster, steps=3)
    assert result["max_param_diff"] < 1e-10, result
    assert len(result["losses"]) == 3
    await all_released(dask_cluster)


@pytest.mark.asyncio
async def test_rnn_with_embedding_and_decoder_on_a_parameter_server_equals_one_process(dask_cluster: str) -> None:
    result = await example("rnn").main(dask_cluster, epochs=1, batches=3)
    assert result["max_grad_diff"] < 1e-10, result
    assert result["max_param_diff"] < 1e-10, result
    assert all(abs(g).max() > 0 for g in result["first_grads"])  # every LSTM parameter got its gradient here
    assert len(result["losses"]) == 3 and result["losses"][-1] < result["losses"][0]
    await all_released(dask_cluster)
