"""The email chunker: a message or a thread, cut by message, then into new text, quoted history and signature.

Input is the raw text of one message, of several RFC 822 messages one after another, or of an mbox
(``From `` separator lines); plain text without headers is one message with no headers. Each
message is cut into regions, every chunk carries ``{"message_index": i, "headers": {...}}`` (the
from, to, cc, date, subject and message_id present, RFC 2047 decoded, unfolded) plus its part:

- ``"headers"``: the separator line and header block, kept only to rebuild the text (``indexed: False``);
- ``"body"``: the message's own new text, indexed; over ``spec.target_tokens`` it is cut by token windows;
- ``"quoted"``: ``>`` lines, an ``On ... wrote:`` attribution with its quote, an Outlook
  ``-----Original Message-----`` / ``From: ... Sent: ...`` block to the end (``indexed: False``,
  so the thread's history is not indexed once per reply);
- ``"signature"``: from a ``-- `` line, a ``Sent from my ...`` line or a closing sign-off
  (``Thanks,`` / ``Best regards,`` and at most a few short lines) up to any quoted history (``indexed: False``).

Offsets are found in the raw text (the email package only reads header values), so every chunk is
exactly ``text[start_char:end_char]``; no chunk spans two messages. Linear in the text's size.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from domain.chunking import check_spec
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker, Tokenizer
from plugins.chunkers.email_headers import header_block, message_spans, read_headers
from plugins.chunkers.email_lines import body_regions
from plugins.chunkers.spans import span_chunks
from plugins.hookspecs import hookimpl
