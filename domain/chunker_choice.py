"""Which chunker reads an artifact: by its type and content, unless the caller or configuration says."""

from __future__ import annotations

import re

FALLBACK = "token-window"
AUTO = "auto"

CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".scala", ".c",
                 ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".sh", ".lua", ".r", ".jl", ".sql")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
_HEADING = re.compile(r"^#{1,6} \S", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$", re.MULTILINE)
_CODE_LINE = re.compile(r"^(def |class |async def |import |from \S+ import |function |func |fn |package |#include |"
                        r"public |private |const \w+ = |let \w+ = |export )", re.MULTILINE)
SNIFF = 20_000  # characters of content looked at


def choose(artifact_type: str, content: str, names: tuple[str | None, ...], available: set[str]) -> str:
    """The chunker for an artifact: email -> email, chat/transcript -> chat, a Markdown file or a
    Markdown-looking document -> markdown, source code -> code, anything else -> token-window.
    ``names`` are the title, source id and source URL, whose file suffix is telling.
    """
    wanted = _wanted(artifact_type, content, names)
    return wanted if wanted in available else FALLBACK


def _wanted(artifact_type: str, content: str, names: tuple[str | None, ...]) -> str:
    if artifact_type == "email":
        return "email"
    if artifact_type in ("chat", "transcript"):
        return "chat"
    suffixes = [name.lower().split("?")[0].split("#")[0].rstrip("/") for name in names if name]
    if any(s.endswith(MARKDOWN_SUFFIXES) for s in suffixes):
        return "markdown"
    if any(s.endswith(CODE_SUFFIXES) for s in suffixes):
        return "code"
    head = content[:SNIFF]
    if len(_HEADING.findall(head)) >= 2 or (_HEADING.search(head) and (_FENCE.search(head) or _TABLE_RULE.search(head))):
        return "markdown"
    lines = [line for line in head.splitlines() if line.strip()]
    if lines and len(_CODE_LINE.findall(head)) >= max(2, len(lines) // 10):
        return "code"
    return FALLBACK
