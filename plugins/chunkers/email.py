"""The email chunker: a message or a thread, cut by message, then into new text, quoted history and signature.

Input is the raw text of one message, of an mbox (a ``From `` line after a blank line, followed by a
header line, starts a message), or of RFC 822 messages one after another (a header block after a
blank line starts one when it has From and Date, Message-ID, Received, Return-Path, MIME-Version or
Delivered-To, and no Outlook ``Sent``). Text without a header block is one message with no headers.

Every chunk carries ``{"message_index": i, "headers": {...}, "part": ...}``: the headers are the
from, to, cc, date, subject and message_id present, unfolded, RFC 2047 words decoded by the email
package, otherwise as written. (Fields are read in the raw text: ``email.parser`` took 1 s of a
10 MB mbox of 8,000 messages with the compat32 policy, ten times that with the default one, which
also rewrites dates.) Parts:

- ``"headers"``: the separator line and header block, kept only to rebuild the text (``indexed: False``);
- ``"body"``: the message's own new text, indexed; past ``spec.target_tokens`` it is cut by token
  windows with the spec's overlap (a body of blank lines only gets ``indexed: False``);
- ``"quoted"``: ``>`` lines, an ``On ... wrote:`` attribution with its quote (or, unquoted, the rest of
  the message), an Outlook ``-----Original Message-----`` or ``From: ... Sent: ...`` block to the end
  (``indexed: False``: a thread's history is not indexed again in every reply);
- ``"signature"``: from a ``-- `` line, a ``Sent from my ...`` line or a closing sign-off (``Thanks,``,
  ``Best regards,`` and at most four short lines) up to any quoted history (``indexed: False``).

Parts not indexed are cut without overlap. Offsets are found in the raw text, never a re-serialised
message, so every chunk is exactly ``text[start_char:end_char]``; no chunk spans two messages.
Linear in the text's size.
"""

from __future__ import annotations

import re
from itertools import accumulate
from collections.abc import Callable
from email.header import decode_header, make_header

from domain.chunking import span_chunks
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker
from plugins.chunkers.base import StructureChunker
from plugins.hookspecs import hookimpl

FIELD = re.compile(r"[!-9;-~]+:")  # a header line starts with a field name and a colon
MBOX_FROM = re.compile(r"^From [^\n]*\n(?=[!-9;-~]+:)", re.MULTILINE)
FIELD_LINE = re.compile(r"^(?=[!-9;-~]+:)", re.MULTILINE)
WANTED = {"from": "from", "to": "to", "cc": "cc", "date": "date", "subject": "subject", "message-id": "message_id"}
KNOWN = frozenset({*WANTED, "bcc", "reply-to", "sender", "in-reply-to", "references", "received", "return-path",
                   "mime-version", "content-type", "content-transfer-encoding", "delivered-to", "x-mailer"})
# A header block inside a text starts a new message only with From and one of these (and no Outlook "Sent").
PROOF = frozenset({"date", "message-id", "received", "return-path", "mime-version", "delivered-to"})

ATTRIBUTION = re.compile(r"[ \t]*(?:On|Le|Am|El)\s.*(?:wrote|a\s+écrit|schrieb[^:\n]{0,80}|escribió)\s?:[ \t]*\r?$")
WRAPPED = ("On ", "Le ", "Am ", "El ")
OUTLOOK = re.compile(r"[ \t]*(?:-{2,}[ \t]*(?:Original Message|Ursprüngliche Nachricht|Message d'origine)"
                     r"[ \t]*-{2,}|_{10,})[ \t]*\r?$", re.IGNORECASE)
OUTLOOK_FROM = re.compile(r"[ \t]*\*?(?:From|Von|De):\*?[ \t]")
OUTLOOK_SENT = re.compile(r"[ \t]*\*?(?:Sent|Gesendet|Envoyé)(?: on)?:\*?[ \t]")
# Lines that may open a quote, signature or history block; the others are plain new text.
MARK = re.compile(r"[ \t]*(?:>|On |Le |Am |El |-|_|\*?(?:From|Von|De):)|Sent from my |Get Outlook for ")
SIGNATURE = re.compile(r"(?:--[ ]?|Sent from my [^\n]*|Get Outlook for [^\n]*)\r?$")
SIGN_OFF = re.compile(r"[ \t]*(?:(?:best|kind|warm|many)[ \t]+)?(?:regards|wishes|thanks|thank you|cheers|best|"
                      r"sincerely|yours(?:[ \t]+(?:truly|sincerely))?|all the best|take care)[ \t]*[,.!]?[ \t]*\r?$",
                      re.IGNORECASE)


class EmailChunker(StructureChunker):
    name = "email"
    version = "1"

    def cut(self, text: str, spec: ChunkSpec, starts: list[int]) -> list[Chunk]:
        quiet = ChunkSpec(spec.target_tokens, 0, spec.single_piece_max_tokens)  # no overlap where nothing is indexed
        chunks: list[Chunk] = []
        for index, (lo, body_lo, hi, fields) in enumerate(messages(text)):
            headers = read_headers(fields)
            regions = [(lo, body_lo, "headers")] if body_lo > lo else []
            regions += body_regions(text, body_lo, hi)
            for start, end, part in regions:
                meta = {"message_index": index, "headers": headers, "part": part}
                if part != "body" or not text[start:end].strip():
                    meta["indexed"] = False
                chunks += span_chunks(text, starts, start, end, spec if part == "body" else quiet, meta, len(chunks))
        return chunks


def messages(text: str) -> list[tuple[int, int, int, dict[str, str]]]:
    """(start, body start, end, header fields) of each message; the separator line and headers lie before the body."""
    lead = len(text) - len(text.lstrip())
    seps = [m for m in MBOX_FROM.finditer(text) if m.start() <= lead or blank_before(text, m.start())]
    if seps:
        bounds = [(m.start(), m.end()) for m in seps]
    else:
        bounds = [(m.start(), m.start()) for m in FIELD_LINE.finditer(text)
                  if m.start() > lead and blank_before(text, m.start()) and starts_message(text, m.start())]
    opening = not bounds or bounds[0][0] > lead  # the text opens with no separator nor proven message
    if opening:
        bounds.insert(0, (0, lead))
    bounds[0] = (0, bounds[0][1])
    ends = [start for start, _ in bounds[1:]] + [len(text)]
    out = []
    for number, ((lo, head), hi) in enumerate(zip(bounds, ends)):
        body, fields, closed = header_block(text, head, hi)
        if number == 0 and opening and not (closed and fields.keys() & KNOWN):
            body, fields = lo, {}  # plain words, perhaps one that only looks like a header line
        out.append((lo, body, hi, fields))
    return out


def blank_before(text: str, pos: int) -> bool:
    return text.endswith("\n\n", 0, pos) or text.endswith("\n\r\n", 0, pos)


def starts_message(text: str, pos: int) -> bool:
    _, fields, closed = header_block(text, pos, len(text))
    return closed and "from" in fields and bool(fields.keys() & PROOF) and "sent" not in fields


def header_block(text: str, pos: int, hi: int) -> tuple[int, dict[str, str], bool]:
    """Where the header block at ``pos`` ends (past its blank line); its fields (lower-case names, the
    first value of each wanted one, unfolded); and whether a blank line or the end closed it."""
    fields: dict[str, list[str]] = {}
    name = ""
    while pos < hi:
        end = text.find("\n", pos, hi)
        end = hi if end < 0 else end + 1
        line = text[pos:end]
        if not line.strip():
            return end, joined(fields), True
        field = FIELD.match(line)
        if field:
            name = field.group()[:-1].lower()
            if name in fields:
                name = ""  # a repeated field: the first one is kept
            else:
                fields[name] = [line[field.end():].rstrip("\r\n")] if name in WANTED else []
        elif line[0] in " \t" and fields:
            if name in WANTED:
                fields[name].append(line.rstrip("\r\n"))  # unfolding removes only the line break
        else:
            return pos, joined(fields), False
        pos = end
    return hi, joined(fields), True


def joined(fields: dict[str, list[str]]) -> dict[str, str]:
    return {name: "".join(parts) for name, parts in fields.items()}


def read_headers(fields: dict[str, str]) -> dict[str, str]:
    """The wanted header values as written, RFC 2047 encoded words decoded by the email package."""
    found: dict[str, str] = {}
    for name, key in WANTED.items():
        if name in fields:
            value = fields[name].strip()
            if "=?" in value:
                try:
                    value = str(make_header(decode_header(value)))
                except Exception:  # a malformed encoded word: keep it as written
                    pass
            found[key] = value
    return found


def body_regions(text: str, lo: int, hi: int) -> list[tuple[int, int, str]]:
    """The body's lines grouped into body / quoted / signature regions (blank-only runs join a neighbour)."""
    if lo == hi:
        return []
    lines = text[lo:hi].split("\n")
    if lines[-1] == "":
        lines.pop()  # the body ends with a line break
    offsets = list(accumulate((len(line) + 1 for line in lines), initial=lo))
    offsets[-1] = hi
    runs: list[list] = []
    for first, last, kind in line_kinds(lines):
        if runs and (kind == runs[-1][2] or blank(lines, first, last)):
            runs[-1][1] = last
        elif runs and blank(lines, *runs[-1][:2]):
            runs[-1][1:] = [last, kind]
        else:
            runs.append([first, last, kind])
    return [(offsets[first], offsets[last], kind) for first, last, kind in runs]


def blank(lines: list[str], first: int, last: int) -> bool:
    return not any(lines[i].strip() for i in range(first, last))


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
            while j < n and not (MARK.match(lines[j]) and history(lines, j)):
                j += 1
        else:
            j = i + 1
            while j < n and not (MARK.match(lines[j]) and (history(lines, j) or SIGNATURE.match(lines[j]))):
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
    if len(lines[i]) > 400:
        return 0  # no attribution is that long; spares the pattern's backtracking on a huge line
    if ATTRIBUTION.match(lines[i]):
        return 1
    if (i + 1 < len(lines) and len(lines[i + 1]) <= 400 and lines[i].lstrip(" \t")[:3] in WRAPPED
            and not lines[i].rstrip().endswith(":")):
        if ATTRIBUTION.match(lines[i].rstrip("\r") + " " + lines[i + 1]):
            return 2
    return 0


def outlook(lines: list[str], i: int) -> bool:
    """An Outlook-style history block: a separator line, or ``From:`` with ``Sent:`` just below."""
    if OUTLOOK.match(lines[i]):
        return True
    return bool(OUTLOOK_FROM.match(lines[i])) and any(OUTLOOK_SENT.match(line) for line in lines[i + 1:i + 4])


def history(lines: list[str], i: int) -> bool:
    return is_quote(lines[i]) or bool(attribution(lines, i)) or outlook(lines, i)


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    register(EmailChunker())
