"""SendRpcBackward and RecvRpcBackward: where a graph leaves one process and enters another.

When tensors that require grad cross in a message inside an autograd
context, the sender records a ``SendRpcBackward`` whose next edges lead to
those tensors, and the receiver makes the received tensors outputs of a
``RecvRpcBackward`` with no next edges. Both are keyed by (context id,
message id), the message id being the sender's. In a distributed backward a
RecvRpcBackward sends the gradients it receives to the sender, where they
become the gradients of the matching SendRpcBackward (dist_engine.cpp's
recv -> send edges).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..autograd.graph import InputMetadata, Node, record
from ..tensor import Tensor
from ._state import _current_part
from .context import DistContext

__all__ = ["SendRpcBackward", "RecvRpcBackward", "record_send", "record_recv"]


class SendRpcBackward(Node):
    """The sender's end of a message: passes the receiver's gradients on to the tensors it sent."""

    __slots__ = ("context_id", "message_id")
    _offloadable = False  # fed by the distributed engine, never worth a thread

    def __init__(self, context_id: int, message_id: int, tensors: Sequence[Tensor]) -> None:
        super().__init__()
        self.context_id = context_id
        self.message_id = message_id
        edges = [t._gradient_edge() for t in tensors]
        self.next_edges = list(edges)
        self.topological_nr = 1 + max(e[0].topological_nr for e in edges)
        self.input_metadata = [InputMetadata(t.shape, t.dtype, t._device) for t in tensors]

    def apply(self, grads: list[Any]) -> list[Any]:
        return list(grads)

    def name(self) -> str:
        return "SendRpcBackward"


class RecvRpcBackward(Node):
    """The receiver's end of a message: sends the gradients of the received tensors back to the sender."""

    __slots__ = ("context_id", "sender", "sender_address", "message_id")
    _offloadable = False  # sends a message: stays on the loop
    _runs_on_undefined = True  # the sender waits for a reply even when every gradient is None

    def __init__(
        self, context_id: int, sender: str, sender_address: str, message_id: int, tensors: Sequence[Tensor]
    ) -> None:
        super().__init__()
        self.context_id = context_id
        self.sender = sender
        self.sender_address = sender_address
        self.message_id = message_id
        record(self, [], tensors)
        self.work = 0

    def apply(self, grads: list[Any]) -> tuple[()]:
        part = _current_part.get()
        if part is None or part.ctx.id != self.context_id:
            raise RuntimeError(
                "RecvRpcBackward can only run in a distributed backward pass: tensors received from "
                f"{self.sender} in autograd context {self.context_id} need "
                "`await dist.backward(context_id, roots)`, not a local backward"
            )
        part.deliver(self, grads)
        return ()

    def name(self) -> str:
        return "RecvRpcBackward"


def record_send(ctx: DistContext, message_id: int, tensors: Sequence[Tensor]) -> SendRpcBackward:
    """Record that ``tensors`` (requiring grad) left this process in message ``message_id``."""
    node = SendRpcBackward(ctx.id, message_id, tensors)
    ctx.send_functions[message_id] = node
    return node


def record_recv(ctx: DistContext, sender: tuple[str, str], message_id: int, tensors: Sequence[Tensor]) -> None:
    """Make ``tensors`` (received with autograd from ``sender``) outputs of a RecvRpcBackward."""
    node = RecvRpcBackward(ctx.id, sender[0], sender[1], message_id, tensors)
    ctx.recv_functions[(sender[1], message_id)] = node
