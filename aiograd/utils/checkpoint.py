"""``torch.utils.checkpoint``, the import path torch code uses: ``checkpoint`` (aiograd's
``ag.checkpoint``) and ``checkpoint_sequential``."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..autograd.checkpoint import checkpoint
from ..nn import Sequential

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint_sequential(
    functions: Sequential | Sequence[Callable[[Any], Any]],
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``functions`` (a ``Sequential``, or a list of modules or functions of one input) on
    ``input`` in ``segments`` consecutive pieces of equal length: every piece but the last
    runs under ``checkpoint`` (its activations are recomputed in backward), the last one
    normally, as ``torch.utils.checkpoint.checkpoint_sequential``. ``preserve_rng_state``
    may be given as a keyword."""
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive integer, got {segments!r}")
    layers: list[Any] = list(functions.children()) if isinstance(functions, Sequential) else list(functions)
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError(f"Unexpected keyword arguments: {','.join(kwargs)}")
    size = len(layers) // segments
    if size == 0:
        raise ValueError(f"checkpoint_sequential: {segments} segments for {len(layers)} functions: at most one a function")
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(_piece(layers[start:end]), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return _piece(layers[end:])(input)


def _piece(layers: list[Any]) -> Callable[[Any], Any]:
    def run(x: Any) -> Any:
        for layer in layers:
            x = layer(x)
        return x

    return run
