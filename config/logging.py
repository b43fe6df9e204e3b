"""Logging: loguru to stderr only (stdout carries MCP), as text or JSON; library logs routed in."""

from __future__ import annotations

import logging
import sys

from loguru import logger


class _ToLoguru(logging.Handler):
    """Sends the standard library's records (mcp, uvicorn, chromadb) through loguru."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        logger.opt(depth=6, exception=record.exc_info).log(level, "{}: {}", record.name, record.getMessage())


def _text(record: dict) -> str:  # type: ignore[type-arg]
    """A line per record; a tool call's lines end with its request id and caller (JSON has them in extra)."""
    call = " request_id={extra[request_id]} actor={extra[actor]}" if "request_id" in record["extra"] else ""
    return "{time:YYYY-MM-DDTHH:mm:ss.SSSZ} {level: <7} {message}" + call + "\n{exception}"


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    logger.remove()
    if fmt == "json":
        logger.add(sys.stderr, level=level, serialize=True, backtrace=False, diagnose=False)
    else:
        logger.add(sys.stderr, level=level, backtrace=False, diagnose=False, format=_text)
    logging.basicConfig(handlers=[_ToLoguru()], level=logging.WARNING, force=True)
    for name in ("mcp", "uvicorn", "uvicorn.error", "chromadb"):
        logging.getLogger(name).handlers = [_ToLoguru()]
        logging.getLogger(name).propagate = False
        logging.getLogger(name).setLevel(logging.WARNING if level != "DEBUG" else logging.DEBUG)
    logging.getLogger("uvicorn.access").disabled = True
