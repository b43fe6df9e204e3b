"""A bridge's early answers: recorded answers given while its server starts, asked again once it listens.

The bridge calls these with its lock held (``answer``, ``watch``, ``checks``, ``take``, ``forget``);
``settle`` runs outside it. See entrypoints/answers.py for what is recorded and why it may be served.
"""

from __future__ import annotations

import json
from typing import Any

from entrypoints.lazylog import logger

from entrypoints.answers import CACHEABLE, Answers, answer_line, entry_key, parse_request

CHECK_PREFIX = "memtrove-bridge-check-"
LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'


class EarlyAnswers:
    def __init__(self, answers: Answers | None, toolsets: tuple[str, ...]) -> None:
        self.answers = answers
        self.toolsets = toolsets
        self.served: list[tuple[bytes, str, Any]] = []  # (request, entry, result) answered before the server listened
        self.pending_checks: dict[str, tuple[str, Any, str]] = {}  # check id -> (entry, result served, method)
        self.recording: dict[Any, str] = {}  # request id -> entry whose answer is recorded

    def answer(self, line: bytes, key: Any, method: str | None) -> bytes | None:
        """The recorded answer to this request (then it is served), else None."""
        if method not in CACHEABLE or self.answers is None:
            return None
        request = parse_request(line)
        entry = entry_key(self.toolsets, *request) if request is not None else ""
        result = self.answers.get(entry)
        if result is None:
            return None
        self.served.append((line, entry, result))
        logger.debug("bridge_answered_early method={}", method)
        return answer_line(key, result)

    def watch(self, key: Any, method: str | None, line: bytes, server_key: str | None) -> None:
        """A request forwarded to a server: its answer is recorded when that server's key is ours."""
        if method in CACHEABLE and self.answers is not None and server_key == self.answers.key:
            if (request := parse_request(line)) is not None:
                self.recording[key] = entry_key(self.toolsets, *request)

    def check_initialize(self, init_line: bytes | None, answered: bytes) -> None:
        """The server's answer to the replayed initialize against the one served, if it was."""
        served = [result for line, _, result in self.served if line is init_line]
        if served and json.loads(answered).get("result") != served[0]:
            self._differed("initialize")

    def checks(self, generation: int) -> list[bytes]:
        """The other served requests again, under ids of the bridge's own (their answers are not forwarded)."""
        lines = []
        for n, (line, entry, result) in enumerate(self.served):
            message = json.loads(line)
            if message["method"] != "initialize":
                message["id"] = check = f"{CHECK_PREFIX}{generation}-{n}"
                self.pending_checks[check] = (entry, result, message["method"])
                lines.append(json.dumps(message).encode() + b"\n")
        self.served.clear()
        return lines

    def take(self, key: Any) -> tuple[str, Any] | None:
        """What the bridge awaits of the answer to ``key``: ("record", entry), ("check", ...), or None."""
        if self.recording and (entry := self.recording.pop(key, None)) is not None:
            return "record", entry
        if self.pending_checks and (check := self.pending_checks.pop(key, None)) is not None:
            return "check", check
        return None

    def settle(self, taken: tuple[str, Any], line: bytes, succeeded: bool) -> tuple[bool, bytes | None]:
        """(whether the line is the bridge's own, not forwarded; a line to send the client instead)."""
        kind, data = taken
        if kind == "record":
            if succeeded and self.answers is not None:
                self.answers.put(data, json.loads(line)["result"])
            return False, None
        _, served, method = data
        if json.loads(line).get("result") == served:
            return True, None
        self._differed(method)
        return True, LIST_CHANGED if method == "tools/list" else None  # the client lists again

    def forget(self) -> None:
        """The server is gone: answers it owed will not come."""
        self.pending_checks.clear()
        self.recording.clear()

    def _differed(self, method: str) -> None:
        logger.warning("bridge_early_answer_differed method={} (the recorded answers are dropped)", method)
        if self.answers is not None:
            self.answers.drop()
