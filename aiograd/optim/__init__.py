"""aiograd.optim: optimizers that update parameters in place from their ``.grad``, as torch.optim."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
