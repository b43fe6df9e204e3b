import pytest
from plugins.testing import ChunkerContract
from plugins.chunkers.token_window import TokenWindowChunker

class TestTokenWindow(ChunkerContract):
    @pytest.fixture
    def chunker(self):
        return TokenWindowChunker()

class TestTokenWindowTiktoken(ChunkerContract):
    @pytest.fixture
    def chunker(self):
        return TokenWindowChunker()
    @pytest.fixture
    def tokenizer(self):
        from adapters.text.tokenizers import TiktokenTokenizer
        return TiktokenTokenizer()
