"""The code chunker's reading of any language by its lines (Python is read with ast: code.py).

Cuts at column-0 lines that look like definitions (with the comments and attributes directly above
them) and at column-0 lines after a blank line; names each piece from its definition line; guesses
the language from a few telling lines.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MODULE = "module-level"


class Piece(NamedTuple):  # a tuple, not a frozen dataclass: a dense file makes hundreds of thousands
    """``text[start:end]``: one definition or statement (with its leading comments), or a lead-in."""

    start: int
    end: int
    kind: str
    name: str
    scope: str  # pieces pack together only within one scope: "" (the module) or a cut class


_MODIFIERS = (r"(?:(?:export|default|pub(?:\([\w\s:]*\))?|public|private|protected|internal|static|final|abstract"
              r"|sealed|open|override|async|unsafe|extern(?:[ \t]+\"[^\"\n]*\")?|inline|virtual|local|partial"
              r"|data|case|declare|const(?=[ \t]+fn\b))[ \t]+)*")
# One definition line, three ways: SQL's CREATE, a keyword (after modifiers), or a C-like signature.
_DEFINITION = (
    r"(?i:create(?:[ \t]+or[ \t]+replace)?[ \t]+(?:\w+[ \t]+)?(?:table|view|function|procedure|trigger|index|type"
    r"|schema)(?:[ \t]+if[ \t]+not[ \t]+exists)?)[ \t]+(?P<sql>[\w.\"`\[\]]+)"
    r"|" + _MODIFIERS + r"(?:(?P<fn>function\*?|def|fn|func|fun|sub|proc|macro_rules!)"
    r"|(?P<cls>class|interface|struct|enum|trait|impl|type|module|mod|namespace|object|record|union|protocol"
    r"|extension)|(?P<var>const|let|var))(?![\w$.:])[ \t]*(?P<rest>[^\r\n]*+)"
    r"|(?P<ctype>[A-Za-z_][\w:<>,*& \t]{0,120}[ \t*&])?(?P<cname>[A-Za-z_][\w:~]*)[ \t]*\((?P<args>[^;\r\n]{0,400})"
    r"[)({,][ \t]*(?=[\r\n]|\Z)")
_DEFINITION_AT = re.compile(_DEFINITION)
_DEFINITION_LINE = re.compile(r"\n(?=[A-Za-z_])(?:" + _DEFINITION + ")")
_AFTER_BLANK = re.compile(r"\n[^\S\n]*\n(?=[^\s}\])])(?!end\b)")  # a column-0 line after a blank line
_GO_METHOD = re.compile(r"\(\s*(?:\w+\s+)?[*&]?\s*(?P<recv>\w+)[^)]*\)\s*(?P<name>\w+)")
_NAME = re.compile(r"(?:<[^>\n]*>[ \t]*)?(?P<name>[\w$.:]++)(?<=\w)(?=[ \t]*(?:[^\w\s]|\Z)|[ \t]+(?:extends|implements"
                   r"|where|struct|interface|func|map|chan|u?int\d*|float\d*|string|bool|byte|rune|any|error)\b)")
_VARIABLE = re.compile(r"(?P<name>[\w$]+)\s*[:=]")
_ABOVE = re.compile(r"[ \t]*(?://|/\*|\*|#|--|;|@|\[)")  # comments, attributes, decorators


def definition(found: re.Match[str]) -> tuple[str, str] | None:
    """``(kind, name)`` of a line ``_DEFINITION`` matched, or None when it is not one after all."""
    if found["sql"]:
        return "definition", found["sql"].strip("\"`[]")
    if found["cname"]:
        return ("function", found["cname"]) if found["ctype"] or not found["args"].strip(" \t)") else None
    rest = found["rest"]
    if found["var"]:
        return ("definition", var["name"]) if (var := _VARIABLE.match(rest)) else None
    if found["fn"] == "func" and (method := _GO_METHOD.match(rest)):
        return "function", f"{method['recv']}.{method['name']}"
    if found["cls"] == "impl" and " for " in rest:
        rest = rest.split(" for ", 1)[1].lstrip()
    named = _NAME.match(rest)
    return (("function" if found["fn"] else "class"), named["name"]) if named else None


def line_pieces(text: str) -> list[Piece]:
    """Pieces cut at column-0 definition lines (with the comments right above) and after blank lines."""
    first = _DEFINITION_AT.match(text)
    found = ([(0, first)] if first else []) + [(m.start() + 1, m) for m in _DEFINITION_LINE.finditer(text)]
    blanks = [m.end() for m in _AFTER_BLANK.finditer(text)]
    heads: list[tuple[int, str, str]] = []  # (start, kind, name), starts ascending
    b = 0
    for start, match in found:
        if (named := definition(match)) is None:
            continue
        while b < len(blanks) and blanks[b] < start:
            if not heads or blanks[b] > heads[-1][0]:
                heads.append((blanks[b], "statements", MODULE))
            b += 1
        while start > 0:  # take the comment and attribute lines right above
            above = text.rfind("\n", 0, start - 1) + 1
            if not _ABOVE.match(text, above, start) or text[above:start].isspace():
                break
            start = above
        while heads and heads[-1][0] >= start:
            heads.pop()  # a comment block that opened a piece belongs to this definition
        heads.append((start, *named))
    heads += [(blank, "statements", MODULE) for blank in blanks[b:] if not heads or blank > heads[-1][0]]
    if not heads or heads[0][0] > 0:
        heads.insert(0, (0, "preamble", MODULE))
    pieces: list[Piece] = []
    seen_definition = False
    for k, (start, kind, name) in enumerate(heads):
        kind = "preamble" if kind == "statements" and not seen_definition else kind
        seen_definition = seen_definition or kind not in ("statements", "preamble")
        pieces.append(Piece(start, heads[k + 1][0] if k + 1 < len(heads) else len(text), kind, name, ""))
    return pieces


_LANGUAGES = (
    ("python", r"^(?:def \w+\(|class \w+[(:]|import \w+$|from [\w.]+ import |async def |if __name__ ==)"),
    ("go", r"^(?:package \w+$|func |import \($|type \w+ (?:struct|interface) \{)"),
    ("rust", r"^(?:(?:pub(?:\(\w+\))? )?(?:fn|struct|enum|trait|mod|use) \w|impl[ <]|#\[\w)"),
    ("javascript", r"^(?:function\b|(?:const|let|var) [\w$]+ = |export |module\.exports|import .* from ['\"])"),
    ("typescript", r"^(?:export )?(?:interface|type|enum|declare|namespace) \w|: (?:string|number|boolean)\b"),
    ("java", r"^(?:package [\w.]+;$|import [\w.]+(?:\.\*)?;$|public (?:final |abstract )?(?:class|interface) )"),
    ("c", r"^(?:#include [<\"]|#define \w|(?:static |extern )?(?:int|void|char|unsigned|struct \w+) \*?\w+\()"),
    ("cpp", r"^(?:namespace \w|template ?<|using namespace |class \w+ (?::|\{))|std::"),
    ("ruby", r"^(?:require ['\"]|module [A-Z]|end$|  def \w+[?!]?$)"),
    ("php", r"^<\?php|\$\w+"),
    ("shell", r"^(?:#!/(?:usr/)?bin/(?:env )?(?:ba|z)?sh|\w+\(\) \{$|fi$|done$|esac$)"),
    ("sql", r"(?i)^(?:create|select|insert|alter|drop) (?:table|view|index|into|from|or|\w+ )"),
)
_LANGUAGE_PATTERNS = [(name, re.compile(pattern, re.M)) for name, pattern in _LANGUAGES]
_REFINES = {"javascript": "typescript", "c": "cpp"}  # a JS file with TS lines is TS; C with C++ lines is C++
SNIFF_CHARS = 20_000


def guess_language(text: str) -> str:
    """The language most lines of the first 20k characters point to, or "unknown"."""
    head = text[:SNIFF_CHARS]
    scores = {name: len(pattern.findall(head)) for name, pattern in _LANGUAGE_PATTERNS}
    best = max(scores, key=lambda name: scores[name])
    if scores[best] == 0:
        return "unknown"
    refined = _REFINES.get(best)
    return refined if refined and scores[refined] else best


# ---- pieces to chunks ---------------------------------------------------------------------------------
