"""The behaviour every Tokenizer shares; subclass TokenizerContract as ``Test...`` to run it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.ports import Tokenizer

SAMPLES = ["", "hello world", "  leading and trailing  ", "emoji 👍🏽 and CJK 日本語 and e\u0301", "a\n\nb\tc"]


class TokenizerContract:
    """Subclasses override ``tokenizer``; it must be cheap to share across examples."""

    @pytest.fixture(scope="class")
    def tokenizer(self) -> Tokenizer:
        raise NotImplementedError

    def test_satisfies_the_port(self, tokenizer: Tokenizer) -> None:
        assert isinstance(tokenizer, Tokenizer)

    @pytest.mark.parametrize("text", SAMPLES)
    def test_starts_are_sorted_offsets_one_per_token(self, tokenizer: Tokenizer, text: str) -> None:
        starts = tokenizer.token_starts(text)
        assert len(starts) == tokenizer.count(text)
        assert starts == sorted(starts)
        assert all(0 <= s < len(text) for s in starts)
        if text:
            assert starts[0] == 0

    def test_empty_text_has_no_tokens(self, tokenizer: Tokenizer) -> None:
        assert tokenizer.count("") == 0 and tokenizer.token_starts("") == []

    def test_unicode_property(self, tokenizer: Tokenizer) -> None:
        @settings(max_examples=150, deadline=None)
        @given(st.text(min_size=1, max_size=300))
        def check(text: str) -> None:
            starts = tokenizer.token_starts(text)
            assert starts[0] == 0 and starts == sorted(starts) and starts[-1] < len(text)
            assert len(starts) == tokenizer.count(text)

        check()
