"""How the page words things: the query's words marked in a hit, counts with their noun, sizes and
durations, which stored links may become links."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from domain.search.lexical import analyse

# Endings a word may carry where the query has its stem ("brew" marks "brews", "brewed", "brewing"):
# the lexical index stems, so such a word matched; any other run of letters makes another word.
_ENDINGS = "(?:s|es|d|ed|ing)?"
_IRREGULAR = {"memory": "memories", "entity": "entities", "query": "queries", "summary": "summaries",
              "is": "are", "was": "were", "has": "have"}


def query_words(query: str) -> re.Pattern[str] | None:
    """The query's words as they stand in a text, whole (any case): the words the lexical signal looked
    for (no stop words, as it) with the endings a stemmer joins to them, and its code-like tokens whole.
    None when the query has none."""
    terms = analyse(query or "")
    stems = sorted({_stem(w) for w in terms.words if len(w) > 1 or w.isdigit()}, key=len, reverse=True)
    parts = [re.escape(t) for t in sorted(terms.exact, key=len, reverse=True)]
    if stems:
        parts.append(rf"(?:{'|'.join(map(re.escape, stems))}){_ENDINGS}")
    return re.compile(rf"(?<!\w)(?:{'|'.join(parts)})(?!\w)", re.IGNORECASE) if parts else None


def highlight(text: str, query: str) -> Markup:
    """``text`` escaped, the query's words marked where they stand as whole words (``query_words``): a
    word is never marked inside another ("do" in "doctest", "one" in "None"), a stop word never."""
    pattern = query_words(query)
    if pattern is None:
        return Markup(escape(text))
    out, last = [], 0
    for found in pattern.finditer(text):
        out += [escape(text[last:found.start()]), Markup("<mark>"), escape(found.group()), Markup("</mark>")]
        last = found.end()
    return Markup("").join([*out, escape(text[last:])])


def _stem(word: str) -> str:
    """A plural's singular (so "notes" marks "note" and "noted" too); other words as they are."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def plural(count: object, noun: str, many: str | None = None) -> str:
    """``1 chunk``, ``2 chunks``, ``1 memory``, ``3 memories`` (the count as given)."""
    number = count if isinstance(count, int | float) else 0
    return f"{count} {noun if number == 1 else many or _IRREGULAR.get(noun) or noun + 's'}"


def duration(ms: object) -> str:
    """A time in milliseconds as a person reads it: ``0.8 ms``, ``230 ms``, ``1.2 s``, ``45 s``."""
    if not isinstance(ms, int | float):
        return "—"
    if ms < 1:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f}".removesuffix(".0") + " s" if ms < 10_000 else f"{ms / 1000:.0f} s"


def linkable(url: object) -> bool:
    """Only web and mail links become links (a stored ``javascript:`` URL would run in the page)."""
    return isinstance(url, str) and url.lower().startswith(("http://", "https://", "mailto:"))


def filesize(value: object) -> str:
    size = float(value) if isinstance(value, int | float) else 0.0
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
