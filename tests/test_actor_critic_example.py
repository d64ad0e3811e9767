"""examples/actor_critic.py: the actor-critic agent learns to balance the pole while a ticker
(and, in the second test, another agent) shares the event loop."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "actor_critic.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("actor_critic_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_cartpole_dynamics() -> None:
    env = load().CartPole(seed=0, max_steps=500)
    obs = env.reset()
    assert obs.shape == (4,) and np.all(np.abs(obs) <= 0.05)
    # always pushing right: the pole falls to the left within a few dozen steps
    for steps in range(1, 501):
        obs, reward, done = env.step(1)
        assert reward == 1.0
        if done:
            break
    assert 5 < steps < 60 and obs[2] < -env.theta_limit


def test_agent_learns_to_balance_the_pole(capsys) -> None:
    """With a fixed seed, the episodes 21-30 last clearly longer than the first ten (a random
    policy keeps the pole up for about 20 steps)."""
    result = load().main(["--agents", "1", "--episodes", "30", "--log-every", "10"])
    (lengths,) = result["lengths"]
    assert len(lengths) == 30
    assert np.mean(lengths[-10:]) > 1.5 * np.mean(lengths[:10]), lengths
    assert result["lags_ms"], "the ticker ran while the agent trained"
    assert "loop lag" in capsys.readouterr().out


def test_two_agents_share_the_loop() -> None:
    result = load().main(["--agents", "2", "--episodes", "4", "--log-every", "0"])
    assert [len(x) for x in result["lengths"]] == [4, 4]
    assert all(np.isfinite(x).all() for x in result["policy_losses"])
