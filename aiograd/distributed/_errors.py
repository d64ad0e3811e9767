"""Errors that cross processes: WorkerLostError, and remote exceptions packed and rebuilt.

NOTE [Remote exceptions]: an exception raised in a remote function (or in a
backward node on a worker) travels back as the pickled exception object plus
its formatted traceback. The caller rebuilds the same type where it can
(the class unpickles on this side) and puts the worker's name and the remote
traceback in its message, so ``except ValueError`` still works across
processes while the message says where it happened. A type that cannot be
rebuilt arrives as a ``RuntimeError`` naming it.
"""

from __future__ import annotations

import os
import pickle
import traceback
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

__all__ = ["WorkerLostError", "pack_exception", "rebuild_exception"]


class WorkerLostError(RuntimeError):
    """A worker left the cluster (killed, crashed, removed) while a call or a backward pass needed it."""

    def __init__(self, worker: str, detail: str = "") -> None:
        self.worker = worker
        self.detail = detail
        super().__init__(f"worker {worker!r} was lost" + (f": {detail}" if detail else ""))

    def __reduce__(self) -> Any:
        return (_rebuild_worker_lost, (self.worker, self.detail, self.args))


def _rebuild_worker_lost(worker: str, detail: str, args: tuple[Any, ...]) -> WorkerLostError:
    err = WorkerLostError(worker, detail)
    err.args = args
    return err


def pack_exception(err: BaseException, where: str) -> dict[str, Any]:
    """What a process sends back when ``err`` ended a request it served (see NOTE [Remote exceptions])."""
    import cloudpickle  # on first use: with dask, the distributed extra

    frames = [f for f in traceback.extract_tb(err.__traceback__) if not _is_machinery(f.filename)]
    tb = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    tb += "".join(traceback.format_exception_only(type(err), err))
    try:
        blob: bytes | None = cloudpickle.dumps(err.with_traceback(None))
    except Exception:
        blob = None
    return {"type": f"{type(err).__module__}.{type(err).__qualname__}", "message": str(err), "where": where,
            "traceback": tb, "pickled": blob}


def _is_machinery(filename: str) -> bool:
    """Frames of aiograd.distributed and of the executor around a remote function: not the user's."""
    return filename.startswith(_PACKAGE_DIR) or filename.endswith(("concurrent/futures/thread.py", "asyncio/events.py"))


def rebuild_exception(packed: dict[str, Any]) -> BaseException:
    """The exception to raise in the caller for a packed remote one."""
    message = f"{packed['message']} (raised on {packed['where']})\nRemote traceback:\n{packed['traceback'].rstrip()}"
    err: BaseException | None = None
    if packed.get("pickled") is not None:
        try:
            err = pickle.loads(packed["pickled"])
        except Exception:
            err = None
    if err is None or not isinstance(err, Exception):
        return RuntimeError(f"{packed['type']}: {message}")
    err.args = (message,)
    return err
