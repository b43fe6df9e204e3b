"""Which chunker reads an artifact: by its type and content, unless the caller or configuration says."""

from __future__ import annotations

import re

from domain.code.model import language_of

FALLBACK = "token-window"
AUTO = "auto"

CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".scala", ".c",
                 ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".sh", ".lua", ".r", ".jl", ".sql")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
RST_SUFFIXES = (".rst", ".rst.txt", ".rest")
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*")  # one punctuation character, 3 or more times
_HEADING = re.compile(r"^#{1,6} \S", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$", re.MULTILINE)
_CODE_LINE = re.compile(r"^(def |class |async def |import |from \S+ import |function |func |fn |package |#include |"
                        r"public |private |const \w+ = |let \w+ = |export )", re.MULTILINE)
SNIFF = 20_000  # characters of content looked at


def choose(artifact_type: str, content: str, names: tuple[str | None, ...], available: set[str]) -> str:
    """The chunker for an artifact: email -> email, chat/transcript -> chat, a Markdown file or a
    Markdown-looking document -> markdown, a reStructuredText file or a document with reST section
    titles -> rst, source code -> code, anything else -> token-window.
    ``names`` are the title, source id and source URL, whose file suffix is telling. A file of a language
    tree-sitter reads (``domain.code.model.LANGUAGES``) other than Python gets ``code-<language>``
    (``code-go``, ``code-tsx``...) when that chunker is available, else ``code``.
    """
    wanted = _wanted(artifact_type, content, names)
    if wanted.startswith("code-") and wanted not in available:
        wanted = "code"
    return wanted if wanted in available else FALLBACK


def _wanted(artifact_type: str, content: str, names: tuple[str | None, ...]) -> str:
    if artifact_type == "email":
        return "email"
    if artifact_type in ("chat", "transcript"):
        return "chat"
    suffixes = [name.lower().split("?")[0].split("#")[0].rstrip("/") for name in names if name]
    if any(s.endswith(MARKDOWN_SUFFIXES) for s in suffixes):
        return "markdown"
    if any(s.endswith(RST_SUFFIXES) for s in suffixes):
        return "rst"
    for suffix in suffixes:
        if (language := language_of(suffix)) is not None and language != "python":
            return f"code-{language}"
    if any(s.endswith(CODE_SUFFIXES) for s in suffixes):
        return "code"
    head = content[:SNIFF]
    if len(_HEADING.findall(head)) >= 2 or (_HEADING.search(head) and (_FENCE.search(head) or _TABLE_RULE.search(head))):
        return "markdown"
    lines = head.splitlines()
    if sum(1 for i in range(len(lines)) if rst_title_at(lines, i) is not None) >= 2:
        return "markdown" if _FENCE.search(head) else "rst"  # underlined titles and fences: Markdown
    lines = [line for line in head.splitlines() if line.strip()]
    if lines and len(_CODE_LINE.findall(head)) >= max(2, len(lines) // 10):
        return "code"
    return FALLBACK


def is_adornment(line: str) -> bool:
    return _ADORNMENT.fullmatch(line) is not None


def rst_title_at(lines: list[str], i: int) -> tuple[int, str, str] | None:
    """A reST section title starting at line ``i`` (lines without their line breaks): how many lines
    it takes, its style (the adornment character, prefixed "o" when overlined) and its text; else None.

    A title follows a blank line (or starts the text), is not indented, and its underline (and
    overline) repeat one punctuation character at least as long as the title.
    """
    line = lines[i]
    if i > 0 and lines[i - 1].strip():
        return None
    if is_adornment(line):  # overline, title, underline
        if i + 2 >= len(lines):
            return None
        title, under = lines[i + 1].strip(), lines[i + 2].strip()
        if title and not is_adornment(lines[i + 1]) and under == line.strip() and len(under) >= len(title):
            return 3, "o" + under[0], title
        return None
    title = line.rstrip()
    following = lines[i + 1] if i + 1 < len(lines) else ""
    if title and title == title.lstrip() and is_adornment(following) and len(following.rstrip()) >= len(title):
        return 2, following.strip()[0], title
    return None
