"""``aiograd.functional``: vjp, jvp, jacobian, hessian (awaitable), as torch.autograd.functional."""

from .autograd.functional import hessian, jacobian, jvp, vjp

__all__ = ["vjp", "jvp", "jacobian", "hessian"]
