"""An actor-critic agent learns to balance a pole, trained online on the event loop it shares.

The environment is CartPole (the classic cart-and-pole dynamics, written here in numpy: no
gym). The agent is one network with two heads, as in pytorch/examples' actor_critic.py: a
``Categorical`` policy over the two pushes and a value estimate. After each episode it
computes discounted returns, the advantage ``return - value``, and the loss
``-log_prob(action) * advantage + smooth_l1(value, return) - 0.05 * entropy``, then
``await loss.backward()`` and ``await opt.step_async()``. Several agents train side by side on
one event loop while a ticker task measures how late the loop wakes it: the backward passes
and optimizer steps never block the loop for long.

    python examples/actor_critic.py                 # 2 agents, 300 episodes each: episodes of 300-400 steps
                                                    # by the end (3 minutes on a busy 2-core machine)
    python examples/actor_critic.py --agents 1 --episodes 30   # a few seconds (what the test runs)
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from aiograd.distributions import Categorical


class CartPole:
    """A pole hinged on a cart that moves along a track: push left (0) or right (1) each step;
    reward 1 per step until the pole leans past 12 degrees, the cart leaves the track, or
    ``max_steps`` pass. The equations and constants are the classic ones (Barto, Sutton and
    Anderson 1983), integrated with Euler steps of 20 ms."""

    gravity, mass_cart, mass_pole, half_length, force, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_limit, x_limit = 12 * 2 * math.pi / 360, 2.4

    def __init__(self, seed: int, max_steps: int = 500) -> None:
        self.rng = np.random.default_rng(seed)
        self.max_steps = max_steps
        self.state = np.zeros(4)
        self.steps = 0

    def reset(self) -> np.ndarray:
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.steps = 0
        return self.state.copy()

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        x, x_dot, theta, theta_dot = self.state
        force = self.force if action == 1 else -self.force
        total = self.mass_cart + self.mass_pole
        pole_moment = self.mass_pole * self.half_length
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + pole_moment * theta_dot**2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.half_length * (4.0 / 3.0 - self.mass_pole * cos**2 / total))
        x_acc = temp - pole_moment * theta_acc * cos / total
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        fallen = abs(x) > self.x_limit or abs(theta) > self.theta_limit
        return self.state.copy(), 1.0, fallen or self.steps >= self.max_steps


class ActorCritic(nn.Module):
    """A shared hidden layer, a policy head (logits of the two actions) and a value head."""

    def __init__(self, hidden: int = 128) -> None:
        super().__init__()
        self.body = nn.Linear(4, hidden)
        self.policy = nn.Linear(hidden, 2)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs: ag.Tensor) -> tuple[ag.Tensor, ag.Tensor]:
        h = F.relu(self.body(obs))
        return self.policy(h), self.value(h).squeeze(-1)


def discounted_returns(rewards: list[float], gamma: float) -> np.ndarray:
    """``G_t = r_t + gamma G_{t+1}``, normalized to zero mean and unit spread (as pytorch/examples)."""
    out = np.empty(len(rewards))
    g = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return (out - out.mean()) / (out.std() + 1e-8)


@dataclass
class Agent:
    """One learner: its environment, network, optimizer, and the history of its episodes."""

    name: str
    seed: int
    hidden: int
    lr: float
    gamma: float = 0.99
    entropy: float = 0.05
    lengths: list[int] = field(default_factory=list)
    policy_losses: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        ag.manual_seed(self.seed)  # the network's initial weights
        self.env = CartPole(self.seed)
        self.model = ActorCritic(self.hidden)
        self.opt = ag.optim.Adam(self.model.parameters(), lr=self.lr)

    async def episode(self) -> int:
        """Play one episode with the current policy, then learn from it; returns its length."""
        obs, done, observations, actions, rewards = self.env.reset(), False, [], [], []
        while not done:
            with ag.no_grad():
                logits, _ = self.model(ag.tensor(obs, dtype=ag.float32))
                action = int(Categorical(logits=logits).sample().item())
            observations.append(obs)
            actions.append(action)
            obs, reward, done = self.env.step(action)
            rewards.append(reward)
            await asyncio.sleep(0)  # one environment step per turn of the loop: others run between
        # the update: one batched forward over the episode, recorded for backward
        logits, values = self.model(ag.tensor(np.stack(observations), dtype=ag.float32))
        dist = Categorical(logits=logits)
        returns = ag.tensor(discounted_returns(rewards, self.gamma), dtype=ag.float32)
        advantage = returns - values.detach()
        policy_loss = -(dist.log_prob(ag.tensor(actions)) * advantage).sum()
        value_loss = F.smooth_l1_loss(values, returns, reduction="sum")
        loss = policy_loss + value_loss - self.entropy * dist.entropy().sum()
        self.opt.zero_grad()
        await loss.backward()
        await self.opt.step_async()
        self.lengths.append(len(rewards))
        self.policy_losses.append(policy_loss.item())
        return len(rewards)

    async def train(self, episodes: int, log_every: int = 0) -> None:
        for i in range(episodes):
            await self.episode()
            if log_every and (i + 1) % log_every == 0:
                recent = self.lengths[-log_every:]
                print(f"{self.name}: episode {i + 1:4d}  mean length of the last {log_every}: "
                      f"{np.mean(recent):6.1f}", flush=True)


async def ticker(period: float, lags: list[float], stop: asyncio.Event) -> None:
    """Wake every ``period`` seconds and record how late each wake-up was (the loop's lag)."""
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(period)
        lags.append(time.perf_counter() - t0 - period)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    agents = [Agent(f"agent {i}", args.seed + i, args.hidden, args.lr, entropy=args.entropy)
              for i in range(args.agents)]
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(0.005, lags, stop))
    t0 = time.perf_counter()
    await asyncio.gather(*(a.train(args.episodes, args.log_every) for a in agents))
    elapsed = time.perf_counter() - t0
    stop.set()
    await tick
    lag_ms = 1e3 * np.array(lags) if lags else np.zeros(1)
    print(f"{args.agents} agent(s), {args.episodes} episodes each, in {elapsed:.1f} s; "
          f"loop lag over {len(lags)} ticks: median {np.median(lag_ms):.2f} ms, "
          f"p99 {np.percentile(lag_ms, 99):.2f} ms, max {lag_ms.max():.2f} ms")
    return {"lengths": [a.lengths for a in agents], "policy_losses": [a.policy_losses for a in agents],
            "lags_ms": lag_ms.tolist(), "seconds": elapsed}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", type=int, default=2, help="agents training side by side on the loop")
    p.add_argument("--episodes", type=int, default=300, help="episodes per agent")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--entropy", type=float, default=0.05, help="weight of the entropy bonus")
    p.add_argument("--log-every", type=int, default=20, help="print the mean length every N episodes (0: never)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    main()
