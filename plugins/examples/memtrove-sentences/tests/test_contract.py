"""The plugin passes memtrove's chunker contract (run: pytest plugins/examples/memtrove-sentences/tests)."""

import pytest

from memtrove_sentences import SentenceChunker
from plugins.testing import ChunkerContract


class TestSentenceChunker(ChunkerContract):
    @pytest.fixture
    def chunker(self):
        return SentenceChunker()

    @pytest.fixture
    def samples(self):
        return ["One. Two! Three? Four.\n\nA new paragraph with more words than the others have.",
                "No sentence ends here at all " * 200]
