"""What every object the SDK hands out that holds a resource shares: it closes on leaving
``with`` and ``async with``."""

from types import TracebackType
from typing import Optional, Type, TypeVar

_Self = TypeVar("_Self", bound="ClosesOnExit")


class ClosesOnExit:
    """``close()`` on leaving ``with``; ``async with`` awaits ``_close_on_async_exit()``, which
    is ``close()`` unless the object closes differently from a coroutine."""

    def close(self) -> None:
        raise NotImplementedError

    async def _close_on_async_exit(self) -> None:
        self.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self._close_on_async_exit()
