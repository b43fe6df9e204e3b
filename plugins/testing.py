"""ChunkerContract: the tests every memtrove chunker must pass, for plugin authors and built-ins alike.

    from memtrove_plugin_testing import ChunkerContract   # or: from plugins.testing import ChunkerContract

    class TestMyChunker(ChunkerContract):
        @pytest.fixture
        def chunker(self):
            return MyChunker()

        # optional: texts your chunker is built for (the contract adds Unicode and edge cases)
        @pytest.fixture
        def samples(self):
            return ["# Title\\n\\nSome text ..."]

Needs pytest and hypothesis. The ``tokenizer`` fixture defaults to a simple word tokenizer;
override it to use another (memtrove's own suite runs the contract with its cl100k tokenizer).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.chunk_checks import chunk_problem
from domain.model import ChunkSpec
from domain.ports import Chunker, Tokenizer
from domain.artifacts.usecases import reconstruct

SPECS = [ChunkSpec(target_tokens=64, overlap_tokens=8, single_piece_max_tokens=64),
         ChunkSpec(target_tokens=200, overlap_tokens=32, single_piece_max_tokens=200)]
UNICODE = ("Emoji 😀👍🏽 and flags 🇵🇹, CJK 東京で寿司を食べた。, combining e\u0301 and a\u0308, "
           "RTL שלום, zero-width\u200bjoiner, tabs\tand\r\nnewlines.")
EDGE_CASES = ["x", "\n", "   ", "word " * 500, "\n\n\n".join(["para"] * 50), UNICODE * 20, "a" * 5000]
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=3000)


class SimpleTokenizer(Tokenizer):
    """Words, single punctuation marks and runs of whitespace-led words as tokens: enough to test with."""

    name = "simple-words"
    _TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")

    def count(self, text: str) -> int:
        return len(self.token_starts(text))

    def token_starts(self, text: str) -> list[int]:
        return [m.start() for m in self._TOKEN.finditer(text)]


class ChunkerContract:
    """Subclass as ``Test<Name>`` and provide a ``chunker`` fixture (and optionally ``samples``)."""

    @pytest.fixture
    def chunker(self) -> Chunker:
        raise NotImplementedError

    @pytest.fixture
    def samples(self) -> list[str]:
        return []

    @pytest.fixture
    def tokenizer(self) -> Tokenizer:
        """Override to test with memtrove's cl100k tokenizer (memtrove's own suite does)."""
        return SimpleTokenizer()

    def _check(self, chunker: Chunker, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> None:
        chunks = chunker.chunk(text, spec, tokenizer)
        problem = chunk_problem(text, chunks)
        assert problem is None, f"{chunker.name}: {problem}"
        assert reconstruct(chunks) == text  # type: ignore[arg-type]
        assert chunker.chunk(text, spec, tokenizer) == chunks, "chunking must be deterministic"

    def test_names_itself(self, chunker: Chunker) -> None:
        assert isinstance(chunker.name, str) and chunker.name.strip() == chunker.name and chunker.name
        assert isinstance(chunker.version, str) and chunker.version

    @pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"target{s.target_tokens}")
    def test_edge_cases_and_samples_rebuild_exactly(self, chunker: Chunker, samples: list[str], spec: ChunkSpec,
                                                    tokenizer: Tokenizer) -> None:
        for text in [*EDGE_CASES, *samples]:
            self._check(chunker, text, spec, tokenizer)

    def test_plain_prose_respects_the_target_size(self, chunker: Chunker, tokenizer: Tokenizer) -> None:
        spec = SPECS[0]
        text = " ".join(f"Sentence number {i} says something plain about item {i}." for i in range(400))
        chunks = chunker.chunk(text, spec, tokenizer)
        assert chunk_problem(text, chunks) is None
        assert max(tokenizer.count(c.content) for c in chunks) <= spec.target_tokens + 8, "chunks far past the target"

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large, HealthCheck.differing_executors])
    @given(text=_TEXT)
    def test_any_text_rebuilds_exactly(self, chunker: Chunker, tokenizer: Tokenizer, text: str) -> None:
        self._check(chunker, text, SPECS[0], tokenizer)
