"""pytorch/examples' RPC reinforcement learning, ported: observers on workers, the agent on the driver.

Each observer (a worker) runs an environment and, at every step, asks the
agent for an action with ``agent_rref.rpc_sync().select_action(...)``: a
worker reaching the driver through an RRef the driver owns. The agent keeps
the log-probabilities of its choices (a local autograd graph on the driver)
and the rewards the observers report, and after each episode updates its
policy with REINFORCE. torch's example uses gym's CartPole; a small
corridor keeps this free of dependencies: the walker starts in the middle
and is rewarded for reaching the right end.

Actions are drawn with one random generator per observer, so the run is
deterministic whatever order the observers' calls arrive in, and its
gradients equal those of the same episodes played in one process.

    python examples/distributed_rl.py                  # a local cluster of 2 observers
    python examples/distributed_rl.py --address tcp://host:8786
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import numpy as np

import aiograd as ag
import aiograd.distributed as dist
import aiograd.nn as nn
import aiograd.nn.functional as F

LENGTH = 6  # corridor cells 0..LENGTH-1; the goal is the last one
GAMMA = 0.9


class Corridor:
    """A tiny environment: one-hot position, actions 0 (left) and 1 (right)."""

    def __init__(self) -> None:
        self.pos = LENGTH // 2

    def reset(self) -> np.ndarray:
        self.pos = LENGTH // 2
        return self.state()

    def state(self) -> np.ndarray:
        s = np.zeros(LENGTH)
        s[self.pos] = 1.0
        return s

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos == LENGTH - 1
        return self.state(), (1.0 if done else -0.1), done


class Policy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.affine1 = nn.Linear(LENGTH, 16, dtype=ag.float64)
        self.affine2 = nn.Linear(16, 2, dtype=ag.float64)

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=-1)


class Agent:
    """Lives on the driver; the observers call its methods through an RRef."""

    def __init__(self, n_observers: int, seed: int) -> None:
        ag.manual_seed(seed)
        self.policy = Policy()
        self.optimizer = ag.optim.Adam(self.policy.parameters(), lr=0.02)
        self.rngs = [np.random.default_rng(seed * 1000 + i) for i in range(n_observers)]
        self.saved_log_probs: dict[int, list[ag.Tensor]] = {i: [] for i in range(n_observers)}
        self.rewards: dict[int, list[float]] = {i: [] for i in range(n_observers)}

    def select_action(self, ob_id: int, state: np.ndarray) -> int:
        probs = self.policy(ag.tensor(state)[None])[0]
        action = int(self.rngs[ob_id].random() >= float(probs[0].item()))  # inverse CDF of 2 actions
        self.saved_log_probs[ob_id].append(probs[action].log())
        return action

    def report_reward(self, ob_id: int, reward: float) -> None:
        self.rewards[ob_id].append(reward)

    def episode_loss(self) -> ag.Tensor:
        """REINFORCE over every observer's episode, in observer order; clears the episode."""
        terms = []
        for ob_id in sorted(self.rewards):
            R, returns = 0.0, []
            for r in reversed(self.rewards[ob_id]):
                R = r + GAMMA * R
                returns.insert(0, R)
            for log_prob, ret in zip(self.saved_log_probs[ob_id], returns):
                terms.append(-log_prob * ret)
            self.saved_log_probs[ob_id], self.rewards[ob_id] = [], []
        return sum(terms[1:], terms[0])


class Observer:
    """Lives on a worker: runs the environment, asks the agent (on the driver) for each action."""

    def __init__(self, ob_id: int) -> None:
        self.id = ob_id
        self.env = Corridor()

    def run_episode(self, agent_rref: dist.RRef, n_steps: int) -> float:
        state, total = self.env.reset(), 0.0
        for _ in range(n_steps):
            action = agent_rref.rpc_sync().select_action(self.id, state)
            state, reward, done = self.env.step(action)
            agent_rref.rpc_sync().report_reward(self.id, reward)
            total += reward
            if done:
                break
        return total


def local_episode(agent: Agent, n_observers: int, n_steps: int) -> list[float]:
    """The same episode in one process (observers one after the other)."""
    totals = []
    for ob_id in range(n_observers):
        env, total = Corridor(), 0.0
        state = env.reset()
        for _ in range(n_steps):
            action = agent.select_action(ob_id, state)
            state, reward, done = env.step(action)
            agent.report_reward(ob_id, reward)
            total += reward
            if done:
                break
        totals.append(total)
    return totals


async def main(address: str | None = None, n_observers: int = 2, episodes: int = 3, n_steps: int = 12,
               seed: int = 0) -> dict[str, Any]:
    await dist.init(n_workers=n_observers, address=address)
    try:
        workers = dist.workers()
        agent, twin = Agent(n_observers, seed), Agent(n_observers, seed)
        agent_rref = dist.RRef(agent)
        observers = [dist.remote(workers[i % len(workers)], Observer, args=(i,)) for i in range(n_observers)]
        rewards, max_grad_diff = [], 0.0
        for _ in range(episodes):
            totals = await asyncio.gather(*(o.rpc_async().run_episode(agent_rref, n_steps) for o in observers))
            assert totals == local_episode(twin, n_observers, n_steps)
            for a in (agent, twin):
                a.optimizer.zero_grad()
                await a.episode_loss().backward()
            max_grad_diff = max([max_grad_diff] + [
                float(np.abs(p.grad.numpy() - q.grad.numpy()).max())
                for p, q in zip(agent.policy.parameters(), twin.policy.parameters())])
            for a in (agent, twin):
                a.optimizer.step()
            rewards.append(float(np.mean(totals)))
        return {"mean_rewards": rewards, "max_grad_diff": max_grad_diff}
    finally:
        await dist.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", help="join this Dask scheduler instead of starting a local cluster")
    parser.add_argument("--episodes", type=int, default=20)
    args = parser.parse_args()
    result = asyncio.run(main(args.address, episodes=args.episodes))
    print(f"mean reward per episode: {[round(r, 2) for r in result['mean_rewards']]}")
    print(f"largest gradient difference from one process: {result['max_grad_diff']:.2e}")
