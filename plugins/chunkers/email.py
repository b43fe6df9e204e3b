"""The email chunker: a message or a thread, cut by message, then into new text, quoted history and signature.

Input is the raw text of one message, of several RFC 822 messages one after another, or of an mbox
(``From `` separator lines); plain text without headers is one message with no headers. Every chunk
carries ``{"message_index": i, "headers": {...}, "part": ...}``; the headers are the from, to, cc,
date, subject and message_id present, RFC 2047 decoded and unfolded, otherwise as written. Parts:

- ``"headers"``: the separator line and header block, kept only to rebuild the text (``indexed: False``);
- ``"body"``: the message's own new text, indexed; past ``spec.target_tokens`` it is cut by token windows;
- ``"quoted"``: ``>`` lines, an ``On ... wrote:`` attribution with its quote (or, unquoted, the rest of
  the message), an Outlook ``-----Original Message-----`` or ``From: ... Sent: ...`` block to the end
  (``indexed: False``: a thread's history is not indexed again in every reply);
- ``"signature"``: from a ``-- `` line, a ``Sent from my ...`` line or a closing sign-off (``Thanks,``,
  ``Best regards,`` and at most four short lines) up to any quoted history (``indexed: False``).

Offsets come from the raw text (the email package only reads header values), so every chunk is
exactly ``text[start_char:end_char]``; no chunk spans two messages. Linear in the text's size.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import replace
from email.header import decode_header, make_header
from email.parser import HeaderParser
from email.policy import compat32

from domain.chunking import check_spec, token_windows
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker, Tokenizer
from plugins.hookspecs import hookimpl

FIELD = re.compile(r"[!-9;-~]+:")  # a header line starts with a field name and a colon
MBOX_FROM = re.compile(r"^From [^\n]*\n(?=[!-9;-~]+:)", re.MULTILINE)
FIELD_LINE = re.compile(r"^(?=[!-9;-~]+:)", re.MULTILINE)
WANTED = {"from": "from", "to": "to", "cc": "cc", "date": "date", "subject": "subject", "message-id": "message_id"}
KNOWN = frozenset({*WANTED, "bcc", "reply-to", "sender", "in-reply-to", "references", "received", "return-path",
                   "mime-version", "content-type", "content-transfer-encoding", "delivered-to", "x-mailer"})
# A header block inside a text starts a new message only with From and one of these (and no Outlook "Sent").
PROOF = frozenset({"date", "message-id", "received", "return-path", "mime-version", "delivered-to"})

ATTRIBUTION = re.compile(r"[ \t]*(?:On|Le|Am|El)\s.*(?:wrote|a\s+écrit|schrieb.*|escribió)\s?:[ \t]*\r?$")
OUTLOOK = re.compile(r"[ \t]*(?:-{2,}[ \t]*(?:Original Message|Ursprüngliche Nachricht|Message d'origine)"
                     r"[ \t]*-{2,}|_{10,})[ \t]*\r?$", re.IGNORECASE)
OUTLOOK_FROM = re.compile(r"[ \t]*\*?(?:From|Von|De):\*?[ \t]")
OUTLOOK_SENT = re.compile(r"[ \t]*\*?(?:Sent|Gesendet|Envoyé)(?: on)?:\*?[ \t]")
SIGNATURE = re.compile(r"(?:--[ ]?|Sent from my [^\n]*|Get Outlook for [^\n]*)\r?$")
SIGN_OFF = re.compile(r"[ \t]*(?:(?:best|kind|warm|many)[ \t]+)?(?:regards|wishes|thanks|thank you|cheers|best|"
                      r"sincerely|yours(?:[ \t]+(?:truly|sincerely))?|all the best|take care)[ \t]*[,.!]?[ \t]*\r?$",
                      re.IGNORECASE)


class EmailChunker(Chunker):
    name = "email"
    version = "1"

    def chunk(self, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> list[Chunk]:
        check_spec(spec)
        if not text:
            return []
        starts = tokenizer.token_starts(text)
        quiet = ChunkSpec(spec.target_tokens, 0, spec.single_piece_max_tokens)  # no overlap where nothing is indexed
        chunks: list[Chunk] = []
        for index, (lo, head_lo, body_lo, hi) in enumerate(messages(text)):
            headers = read_headers(text[head_lo:body_lo]) if body_lo > head_lo else {}
            regions = [(lo, body_lo, "headers")] if body_lo > lo else []
            regions += body_regions(text, body_lo, hi)
            for start, end, part in regions:
                meta = {"message_index": index, "headers": headers, "part": part}
                if part != "body" or not text[start:end].strip():
                    meta["indexed"] = False
                chunks += span_chunks(text, starts, start, end, spec if part == "body" else quiet, meta, len(chunks))
        return chunks


def messages(text: str) -> list[tuple[int, int, int, int]]:
    """(start, header start, body start, end) of each message; header start == body start: no headers."""
    lead = len(text) - len(text.lstrip())
    seps = [m for m in MBOX_FROM.finditer(text) if m.start() <= lead or blank_before(text, m.start())]
    if seps:
        bounds = [(m.start(), m.end()) for m in seps]
    else:
        bounds = [(m.start(), m.start()) for m in FIELD_LINE.finditer(text)
                  if m.start() > lead and blank_before(text, m.start()) and starts_message(text, m.start())]
    if not bounds or bounds[0][0] != 0:
        bounds.insert(0, (0, 0))
    ends = [start for start, _ in bounds[1:]] + [len(text)]
    out = []
    for (lo, head), hi in zip(bounds, ends):
        body, names, closed = header_block(text, head, hi)
        if lo == head and lo == 0 and not (closed and names & KNOWN):
            body = head  # the text opens with plain words that only look like a header line
        out.append((lo, head, body, hi))
    return out


def blank_before(text: str, pos: int) -> bool:
    return text.endswith("\n\n", 0, pos) or text.endswith("\n\r\n", 0, pos)


def starts_message(text: str, pos: int) -> bool:
    _, names, closed = header_block(text, pos, len(text))
    return closed and "from" in names and bool(names & PROOF) and "sent" not in names


def header_block(text: str, pos: int, hi: int) -> tuple[int, set[str], bool]:
    """Where the header block at ``pos`` ends (past its blank line), its field names (lower case),
    and whether a blank line or the end closed it (rather than a line that is no header)."""
    names: set[str] = set()
    while pos < hi:
        end = text.find("\n", pos, hi)
        end = hi if end < 0 else end + 1
        line = text[pos:end]
        if not line.strip():
            return end, names, True
        field = FIELD.match(line)
        if field:
            names.add(field.group()[:-1].lower())
        elif line[0] not in " \t" or not names:
            return pos, names, False
        pos = end
    return hi, names, True


def read_headers(block: str) -> dict[str, str]:
    """The wanted header values as written, unfolded and RFC 2047 decoded (compat32: fast, no reformatting)."""
    parsed = HeaderParser(policy=compat32).parsestr(block)
    found: dict[str, str] = {}
    for name, key in WANTED.items():
        value = parsed.get(name)
        if value is None:
            continue
        raw = re.sub(r"\r?\n(?=[ \t])", "", str(value)).strip()
        try:
            found[key] = str(make_header(decode_header(raw)))
        except Exception:  # a malformed encoded word: keep it as written
            found[key] = raw
    return found


def body_regions(text: str, lo: int, hi: int) -> list[tuple[int, int, str]]:
    """The body's lines grouped into body / quoted / signature regions (blank-only runs join a neighbour)."""
    offsets, lines = [], []
    pos = lo
    while pos < hi:
        end = text.find("\n", pos, hi)
        end = hi if end < 0 else end + 1
        offsets.append(pos)
        lines.append(text[pos:end])
        pos = end
    offsets.append(hi)
    runs: list[list] = []
    for first, last, kind in line_kinds(lines):
        if runs and (kind == runs[-1][2] or all(not lines[i].strip() for i in range(first, last))):
            runs[-1][1] = last
        elif runs and all(not lines[i].strip() for i in range(runs[-1][0], runs[-1][1])):
            runs[-1][1:] = [last, kind]
        else:
            runs.append([first, last, kind])
    return [(offsets[first], offsets[last], kind) for first, last, kind in runs]


def line_kinds(lines: list[str]) -> list[tuple[int, int, str]]:
    """Runs (first line, end line, kind) in order, covering every line."""
    runs: list[tuple[int, int, str]] = []
    n, i = len(lines), 0
    while i < n:
        line = lines[i]
        if is_quote(line):
            j, kind = quote_end(lines, i), "quoted"
        elif (k := attribution(lines, i)):
            m = i + k
            while m < n and not lines[m].strip():
                m += 1
            j, kind = (quote_end(lines, m) if m < n and is_quote(lines[m]) else n), "quoted"
        elif outlook(lines, i):
            j, kind = n, "quoted"
        elif SIGNATURE.match(line):
            j, kind = i + 1, "signature"
            while j < n and not history(lines, j):
                j += 1
        else:
            j = i + 1
            while j < n and not (history(lines, j) or SIGNATURE.match(lines[j])):
                j += 1
            runs += sign_off(lines, i, j)
            i = j
            continue
        runs.append((i, j, kind))
        i = j
    return runs


def sign_off(lines: list[str], i: int, j: int) -> list[tuple[int, int, str]]:
    """New text [i, j), its closing sign-off and at most four short lines after it split off as a signature."""
    tail = [k for k in range(j - 1, max(i, j - 12) - 1, -1) if lines[k].strip()][:5]
    for k in reversed(tail):
        if SIGN_OFF.match(lines[k]) and all(len(lines[t]) <= 60 for t in tail if t > k):
            if any(lines[t].strip() for t in range(i, k)):
                return [(i, k, "body"), (k, j, "signature")]
            break
    return [(i, j, "body")]


def is_quote(line: str) -> bool:
    return line.lstrip(" \t").startswith(">")


def quote_end(lines: list[str], i: int) -> int:
    """End of the quote run starting at line ``i``: quote lines and the blank lines between them."""
    end = j = i
    while j < len(lines):
        if is_quote(lines[j]):
            end = j + 1
        elif lines[j].strip():
            break
        j += 1
    return end


def attribution(lines: list[str], i: int) -> int:
    """How many lines (0, 1 or 2 when wrapped) an ``On <date>, <name> wrote:`` line takes at ``i``."""
    if ATTRIBUTION.match(lines[i]):
        return 1
    if i + 1 < len(lines) and lines[i][:1] in "OLAE" and not lines[i].rstrip().endswith(":"):
        if ATTRIBUTION.match(lines[i].rstrip("\r\n") + " " + lines[i + 1]):
            return 2
    return 0


def outlook(lines: list[str], i: int) -> bool:
    """An Outlook-style history block: a separator line, or ``From:`` with ``Sent:`` just below."""
    if OUTLOOK.match(lines[i]):
        return True
    return bool(OUTLOOK_FROM.match(lines[i])) and any(OUTLOOK_SENT.match(line) for line in lines[i + 1:i + 4])


def history(lines: list[str], i: int) -> bool:
    return is_quote(lines[i]) or bool(attribution(lines, i)) or outlook(lines, i)


def span_chunks(text: str, starts: list[int], lo: int, hi: int, spec: ChunkSpec, meta: dict,
                first_index: int) -> list[Chunk]:
    """Token windows over ``text[lo:hi]``, from the whole text's token starts, with offsets and indexes shifted."""
    local = [s - lo for s in starts[bisect_left(starts, lo):bisect_left(starts, hi)]]
    if not local or local[0] != 0:
        local.insert(0, 0)  # a token that began before ``lo`` is counted as one starting here
    return [replace(c, index=first_index + k, start_char=c.start_char + lo, end_char=c.end_char + lo,
                    metadata=dict(meta)) for k, c in enumerate(token_windows(text[lo:hi], local, spec))]


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    register(EmailChunker())
