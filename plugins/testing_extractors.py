"""ExtractorContract: the tests every memtrove extractor must pass, for plugin authors and built-ins alike.

    from plugins.testing_extractors import ExtractorContract

    class TestMyExtractor(ExtractorContract):
        @pytest.fixture
        def extractor(self):
            return MyExtractor()

        # optional: passages your extractor is built for (the contract adds Unicode and edge cases)
        @pytest.fixture
        def samples(self):
            return ["Alice works at Acme Corp in Paris."]

Each answer is checked with ``extraction_problem`` (one result per passage, in order; relations and
observations only of entities the result lists; excerpts at most 300 characters), which build_graph
also runs before writing anything.
"""

from __future__ import annotations

import pytest

from domain.graph.extraction import Extracted, Extractor, Passage, extraction_problem

UNICODE = ("Emoji 😀👍🏽 and flags 🇵🇹, CJK 東京で寿司を食べた。, combining e\u0301 and a\u0308, RTL שלום, "
           "zero-width\u200bjoiner, tabs\tand\r\nnewlines. José Álvarez lives in São Paulo.")
EDGE_CASES = ["", " ", "\n\n", "x", "!!!", UNICODE, "word " * 2000, "Alice. " * 300,
              "I love painting and my sister Anna lives in Boston."]


class ExtractorContract:
    @pytest.fixture
    def extractor(self) -> Extractor:
        raise NotImplementedError

    @pytest.fixture
    def samples(self) -> list[str]:
        return ["Alice works at Acme Corp in Paris. She met Bob at the Python conference.",
                "Melanie ran a charity race with her kids last Saturday."]

    def passages(self, texts: list[str]) -> list[Passage]:
        return [Passage("memory", f"mem_{i}", text, speaker="Caroline" if i % 2 else None,
                        when="2024-05-01T10:00:00Z") for i, text in enumerate(texts)]

    def test_it_names_itself(self, extractor: Extractor) -> None:
        assert isinstance(extractor, Extractor)
        assert isinstance(extractor.name, str) and extractor.name and isinstance(extractor.version, str)

    def test_every_answer_is_well_formed(self, extractor: Extractor, samples: list[str]) -> None:
        passages = self.passages([*samples, *EDGE_CASES])
        found = extractor.extract(passages)
        assert extraction_problem(passages, found) is None, extraction_problem(passages, found)

    def test_nothing_in_nothing_out(self, extractor: Extractor) -> None:
        assert extractor.extract([]) == []
        blank = extractor.extract(self.passages(["", "   "]))
        assert blank == [Extracted(), Extracted()] or all(not r.relations for r in blank)

    def test_samples_name_something_and_answers_keep_their_order(self, extractor: Extractor,
                                                                   samples: list[str]) -> None:
        passages = self.passages(samples)
        alone = [extractor.extract([p])[0] for p in passages]
        together = extractor.extract(passages)
        assert together == alone  # a passage's answer does not depend on its neighbours
        assert any(r.entities for r in together)

    def test_the_same_passages_give_the_same_answer(self, extractor: Extractor, samples: list[str]) -> None:
        passages = self.passages(samples * 3)
        assert extractor.extract(passages) == extractor.extract(passages)
