"""The values RRefs name, on their owner: filled when the call that makes them returns, freed with their handle.

See NOTE [RRef lifetime] in rpc.py. A slot is created by whichever comes
first, the call that makes the value or a use of it (a method call may
arrive on another connection before the creating call), and its users wait
until it is filled. Deletions requested by collected handles are batched per
owner.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["RRefStore"]


class _Slot:
    """One value (or the error of the call that was to make it)."""

    __slots__ = ("value", "error", "ready", "creator", "children")

    def __init__(self, creator: str) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.ready = asyncio.Event()
        self.creator = creator  # address of the process whose request made it
        self.children: list[int] = []  # RRefs to parts of the value (its parameters), freed with it

    def resolve(self, value: Any) -> None:
        self.value = value
        self.ready.set()

    def fail(self, err: BaseException) -> None:
        self.error = err
        self.ready.set()

    async def get(self) -> Any:
        await self.ready.wait()
        if self.error is not None:
            raise self.error
        return self.value


class RRefStore:
    """The RRef values one process owns, by RRef id."""

    def __init__(self, address: str) -> None:
        self.address = address  # this process's
        self._slots: dict[int, _Slot] = {}
        self._forgotten: dict[str, list[tuple[int, Any]]] = {}  # owner address -> (id, creation) to free

    def __contains__(self, rref_id: int) -> bool:
        return rref_id in self._slots

    def __len__(self) -> int:
        return len(self._slots)

    def get(self, rref_id: int) -> _Slot | None:
        return self._slots.get(rref_id)

    def slot(self, rref_id: int, creator: str) -> _Slot:
        """The slot of ``rref_id``, made empty on first mention."""
        s = self._slots.get(rref_id)
        if s is None:
            s = self._slots[rref_id] = _Slot(creator)
        return s

    def hold(self, rref_id: int, value: Any) -> None:
        """Own ``value`` under ``rref_id`` (an RRef made here: ``RRef(value)``, parameter RRefs)."""
        self.slot(rref_id, self.address).resolve(value)

    async def value(self, rref_id: int) -> Any:
        """The value, once made (raises the error of the call that was to make it)."""
        return await self.slot(rref_id, self.address).get()

    def add_child(self, parent: int, child: int) -> None:
        s = self._slots.get(parent)
        if s is not None:
            s.children.append(child)

    def delete(self, rref_ids: list[int]) -> None:
        for i in rref_ids:
            s = self._slots.pop(i, None)
            if s is not None:
                self.delete(s.children)

    def drop_created_by(self, address: str) -> None:
        """Free what the requests of ``address`` made (a driver that left)."""
        self.delete([i for i, s in self._slots.items() if s.creator == address])

    def clear(self) -> None:
        self._slots.clear()
        self._forgotten.clear()

    # ----- handles collected elsewhere -----------------------------------------------------
    def forget(self, owner: str, rref_id: int, creation: Any) -> bool:
        """Queue the value of a collected handle for deletion at ``owner``; True for a new batch."""
        batch = self._forgotten.setdefault(owner, [])
        batch.append((rref_id, creation))
        return len(batch) == 1

    async def forgotten(self, owner: str) -> list[int]:
        """The ids queued for ``owner``, once the calls still making their values have ended."""
        batch = self._forgotten.pop(owner, [])
        creations = [c for _, c in batch if c is not None]
        if creations:  # a value still being made must exist before it can be freed
            await asyncio.gather(*(c if asyncio.isfuture(c) else asyncio.wrap_future(c) for c in creations),
                                 return_exceptions=True)
        return [i for i, _ in batch]
