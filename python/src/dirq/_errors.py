"""dirq's errors, as Python exceptions."""

from typing import Optional


class DirqError(Exception):
    """A user error, with dirq's ``code`` (``SQL_ERROR``, ``QUERY_NOT_READONLY``,
    ``CONFIG_INVALID``, ...) and ``message``, the same as the CLI's ``dirq: <message>`` line.

    Codes only the Python side gives: ``CLI_UNAVAILABLE`` (no dirq CLI or Node.js to run it),
    ``CHILD_EXITED`` (the dirq process ended before answering) and ``EXTRACT_REENTRY`` (an
    ``extract`` function called back into its own index)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"DirqError({self.code!r}, {self.message!r})"


def error_from_data(data: object, fallback: Optional[str] = None) -> DirqError:
    """The exception for an error the dirq process sent: ``{"code": ..., "message": ...}``."""
    if isinstance(data, dict):
        code = data.get("code")
        message = data.get("message")
        if isinstance(code, str) and isinstance(message, str):
            return DirqError(code, message)
    shown = fallback or f"the dirq process sent an error without a code: {data!r}"
    return DirqError("INTERNAL", shown)
