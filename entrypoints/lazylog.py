"""The bridge's logger: loguru (0.1-0.2 s to import) is loaded at the first record that passes the
level, not when a bridge starts. Once the command has configured loguru itself, every record goes to it."""

from __future__ import annotations

from typing import Any

LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "SUCCESS": 25, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


class LazyLogger:
    def __init__(self) -> None:
        self.pending: tuple[str, str] | None = None  # (level, format) to configure loguru with at first use
        self.threshold = 0

    def defer(self, level: str, fmt: str) -> None:
        """Configure loguru with ``level`` and ``fmt`` only when a record at ``level`` or above comes."""
        self.pending, self.threshold = (level, fmt), LEVELS.get(level.upper(), 0)

    def debug(self, message: str, *args: Any) -> None:
        self._log("DEBUG", message, args)

    def info(self, message: str, *args: Any) -> None:
        self._log("INFO", message, args)

    def warning(self, message: str, *args: Any) -> None:
        self._log("WARNING", message, args)

    def _log(self, level: str, message: str, args: tuple[Any, ...]) -> None:
        if LEVELS[level] < self.threshold:
            return
        if self.pending is not None:
            from config.logging import configure_logging

            configure_logging(*self.pending)
            self.pending, self.threshold = None, 0
        from loguru import logger as loguru

        loguru.opt(depth=2).log(level, message, *args)


logger = LazyLogger()
