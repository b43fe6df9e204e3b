"""The behaviour every Embedder adapter shares; subclass EmbedderContract as ``Test...`` to run it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from domain.model import EmbeddingProfile
from domain.ports import Embedder

TEXTS = ["The cat sat on the mat.", "Quarterly revenue grew 12%.", "Prefers dark mode in every editor."]


class EmbedderContract:
    """Generic Embedder checks; subclasses override the ``make_embedder`` fixture.

    ``make_embedder`` returns a factory of fresh embedders, so it may depend on other fixtures
    (a fake server, a temp dir) and tear them down after the test.
    """

    @pytest.fixture
    def make_embedder(self) -> Callable[[], Embedder]:
        raise NotImplementedError("override the make_embedder fixture in the subclass")

    @pytest.fixture
    def embedder(self, make_embedder: Callable[[], Embedder]) -> Embedder:
        return make_embedder()

    def test_satisfies_the_port(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)

    def test_profile_fields(self, embedder: Embedder) -> None:
        profile = embedder.profile
        assert isinstance(profile, EmbeddingProfile)
        assert isinstance(profile.provider, str) and profile.provider
        assert isinstance(profile.model, str) and profile.model
        assert isinstance(profile.dimensions, int) and profile.dimensions > 0
        assert isinstance(profile.max_tokens, int) and profile.max_tokens > 0

    def test_one_vector_per_text_with_profile_dimensions(self, embedder: Embedder) -> None:
        vectors = embedder.embed_documents(TEXTS)
        assert len(vectors) == len(TEXTS)
        for vector in vectors:
            assert len(vector) == embedder.profile.dimensions
            assert all(isinstance(x, float) for x in vector)

    def test_empty_input_gives_empty_list(self, embedder: Embedder) -> None:
        assert embedder.embed_documents([]) == []

    def test_order_is_preserved(self, embedder: Embedder) -> None:
        together = embedder.embed_documents(TEXTS)
        one_by_one = [embedder.embed_documents([text])[0] for text in TEXTS]
        for batched, single in zip(together, one_by_one, strict=True):
            assert batched == pytest.approx(single, abs=1e-4)

    def test_different_texts_give_different_vectors(self, embedder: Embedder) -> None:
        first, second = embedder.embed_documents(TEXTS[:2])
        assert first != pytest.approx(second, abs=1e-3)

    def test_embed_query_has_profile_dimensions(self, embedder: Embedder) -> None:
        vector = embedder.embed_query("what does the user prefer?")
        assert len(vector) == embedder.profile.dimensions
        assert all(isinstance(x, float) for x in vector)

    def test_same_text_gives_same_vector(self, embedder: Embedder) -> None:
        assert embedder.embed_query(TEXTS[0]) == pytest.approx(embedder.embed_query(TEXTS[0]), abs=1e-6)
        again = embedder.embed_documents(TEXTS)
        assert again == [pytest.approx(v, abs=1e-6) for v in embedder.embed_documents(TEXTS)]

    def test_describe_names_the_profile(self, embedder: Embedder) -> None:
        facts = embedder.describe()
        assert isinstance(facts, dict)
        assert facts["provider"] == embedder.profile.provider
        assert facts["model"] == embedder.profile.model
        assert facts["dimensions"] == embedder.profile.dimensions

    def test_count_tokens_is_a_positive_int_growing_with_text(self, embedder: Embedder) -> None:
        short = embedder.count_tokens("hello world")
        assert isinstance(short, int) and short > 0
        assert embedder.count_tokens("hello world " * 20) > short

    @pytest.mark.parametrize("text", [
        "The cat sat on the mat.", "   \n\n\t  ", "get_user_by_id(src/app/users.py:42) -> None",
        "Café crème à Zürich, naïve façade", "東京で寿司を食べた。長い文章です。", "🙂🙃 emoji 👩‍👩‍👧 family",
        "<|endoftext|> special <|fim_prefix|> text", "x" * 3000, "a1b2c3 " * 400, "a lone \ud800 surrogate",
    ])
    def test_the_token_ceiling_is_never_below_the_count(self, embedder: Embedder, text: str) -> None:
        assert embedder.token_ceiling(text) >= embedder.count_tokens(text)
