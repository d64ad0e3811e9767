"""DistributedOptimizer: one local optimizer per owner of parameters, stepped with a context's gradients."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Sequence

from ..tensor import Tensor
from .context import get_gradients
from .rpc import RRef, _call_method, _on_owner, remote
from ._state import awaitable_or_run, current_agent

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    """Lives on the owner of its parameters (an RRef's value); keeps the optimizer's state across steps."""

    def __init__(self, optimizer_class: type, param_rrefs: Sequence[RRef], defaults: dict[str, Any]) -> None:
        self.params: list[Tensor] = [r.local_value() for r in param_rrefs]
        self.optimizer = optimizer_class(self.params, **defaults)
        self.lock = threading.Lock()  # one step at a time (steps run on the worker's threads)

    def step(self, context_id: int) -> None:
        """Apply the gradients this process's parameters got in ``context_id``; ``.grad`` is left as it was."""
        grads = get_gradients(context_id)
        with self.lock:
            saved = [p._grad for p in self.params]
            try:
                for p in self.params:
                    p._grad = grads.get(p)
                self.optimizer.step()
            finally:
                for p, g in zip(self.params, saved):
                    p._grad = g


class DistributedOptimizer:
    """torch.distributed.optim.DistributedOptimizer: ``await opt.step(context_id)`` on every owner at once.

    ``params_rref`` lists RRefs to parameters (``await dist.parameter_rrefs(model_rref)``,
    or ``RRef(p)`` for the driver's own); each owner gets a local
    ``optimizer_class(params, **defaults)`` (``optim.SGD``, ``Adam``, ``AdamW``...),
    whose state (momenta, moments) persists across steps.
    """

    def __init__(self, optimizer_class: type, params_rref: Sequence[RRef], **defaults: Any) -> None:
        agent = current_agent()
        by_owner: dict[str, tuple[str, list[RRef]]] = {}
        for r in params_rref:
            if not isinstance(r, RRef):
                raise TypeError(f"DistributedOptimizer takes RRefs to parameters, got {type(r).__name__}")
            by_owner.setdefault(r._address, (r._owner, []))[1].append(r)
        if not by_owner:
            raise ValueError("DistributedOptimizer got an empty parameter list")
        self.optimizer_class = optimizer_class
        self._optimizers: list[RRef] = []
        for address, (owner, rrefs) in by_owner.items():
            if address == agent.address:
                self._optimizers.append(RRef(_LocalOptimizer(optimizer_class, rrefs, defaults)))
            else:
                self._optimizers.append(remote(owner, _LocalOptimizer, args=(optimizer_class, rrefs, defaults)))

    def step(self, context_id: int) -> Any:
        """Every owner applies the gradients of ``context_id`` to its parameters, concurrently.

        ``await opt.step(context_id)`` under an event loop; blocking in a thread that runs none.
        """
        return awaitable_or_run("DistributedOptimizer.step", "await opt.step(context_id)", self._step(context_id))

    async def _step(self, context_id: int) -> None:
        await asyncio.gather(*(_on_owner(o, _call_method, (o, "step", (context_id,), {}), None)
                               for o in self._optimizers))
