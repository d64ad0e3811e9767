"""aiograd.testing: what a test suite of code that uses aiograd needs, as ``torch.testing``.

``assert_close`` compares tensors, numbers and nests of them with dtype-based
tolerances and says which elements differ and by how much; ``make_tensor`` makes a
random tensor of any dtype, layout and range. ``LoopBlockWatchdog`` and
``loop_backends`` are for async tests: the first fails a block of code that kept the
event loop busy too long, the second runs a test on asyncio, uvloop and trio.

The pytest plugin that comes with aiograd (entry point ``aiograd``) turns the last two
into a marker and fixtures: ``@pytest.mark.aiograd_no_blocking(max_ms=...)``,
``@pytest.mark.aiograd_backends``, the ``aiograd_loop_watchdog`` fixture. See the
how-to "Testing async code that trains".
"""

from __future__ import annotations

from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor
from ._loops import LoopBlockWatchdog, loop_backends

__all__ = ["assert_close", "make_tensor", "assert_allclose", "LoopBlockWatchdog", "loop_backends"]
