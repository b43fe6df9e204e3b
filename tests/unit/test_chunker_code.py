"""The code chunker: the chunker contract, cuts at top-level definitions with their qualified names,
class splitting, packing, the line-based fallback for other languages, generated modules and any
text (Hypothesis), and real files (this repository's Python, part of the standard library)."""

from __future__ import annotations

import ast
import functools
import gc
import json
import io
import keyword
import unicodedata
from bisect import bisect_left
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from domain.chunk_checks import chunk_problem
from domain.errors import ValidationError
from domain.model import Chunk, ChunkSpec
from domain.artifacts.usecases import reconstruct
from plugins.chunkers import code
from plugins.chunkers.code import MODULE, CodeChunker, guess_language, line_pieces, line_starts, python_outline
from plugins.testing import ChunkerContract, SimpleTokenizer

REPO = Path(__file__).resolve().parents[2]
STDLIB = Path(json.__file__).resolve().parents[1]
KINDS = {"function", "class", "method", "preamble", "statements", "definition"}
SIMPLE = SimpleTokenizer()
BIG = ChunkSpec(target_tokens=100_000, overlap_tokens=0, single_piece_max_tokens=100_000)

PYTHON = '''#!/usr/bin/env python3
"""Inventory helpers — naïve on purpose."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

LIMIT = 10  # a constant
GREETING = "こんにちは 😀"


# Adds things.
# Two comment lines.
@functools.cache
@decorate(level=2)
def add(a: int, b: int) -> int:
    """Add."""
    def helper(x):
        return x * 2
    return helper(a) + b


async def fetch(url):
    async with session(url) as response:
        return await response.text()


@dataclass(frozen=True)
class Café(Base, metaclass=Meta):
    """A café — with an accent."""

    name: str = "Zürich"

    # the price
    def price(self) -> float:
        return 3.5

    @property
    async def menu(self):
        return ["crème brûlée", "抹茶"]

    class Inner:
        def deep(self):
            return 1


def 東京(δ):
    return δ + 1


if __name__ == "__main__":
    asyncio.run(fetch("https://example.com"))
'''
JAVASCRIPT = '''// Copyright 2024
'use strict';
const fs = require('fs');

/**
 * Adds two numbers.
 */
function add(a, b) {
  return a + b;
}

export class Cart extends Base {
  constructor() {
    super();
  }
}

const handler = async (req) => {
  return { ok: true, emoji: "😀" };
};

module.exports = { add, Cart };
'''
GO = '''package main

import (
\t"fmt"
)

// Server serves.
type Server struct {
\taddr string
}

// Start starts the server.
func (s *Server) Start() error {
\treturn nil
}

func main() {
\tfmt.Println("héllo")
}
'''
RUST = '''use std::fmt;

/// A point.
#[derive(Debug, Clone)]
pub struct Point {
    x: i32,
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({})", self.x)
    }
}

pub(crate) fn origin() -> Point {
    Point { x: 0 }
}
'''
SAMPLES = [PYTHON, PYTHON.replace("\n", "\r\n"), PYTHON.replace("\n", "\r"), "\ufeff" + PYTHON, JAVASCRIPT, GO, RUST,
           PYTHON.replace("def add(a: int", "def add(a: int,,"), "x = 1\n" * 300, "\t\n\x0c\n# only comments\n"]


@functools.cache
def tiktoken_tokenizer():
    from adapters.text.tokenizers import TiktokenTokenizer

    return TiktokenTokenizer()


class TestCodeChunker(ChunkerContract):
    @pytest.fixture
    def chunker(self):
        return CodeChunker()

    @pytest.fixture
    def samples(self):
        return SAMPLES


class TestCodeChunkerTiktoken(TestCodeChunker):
    @pytest.fixture
    def tokenizer(self):
        return tiktoken_tokenizer()


# ---- helpers ----------------------------------------------------------------------------------------

def names_of(chunk: Chunk) -> list[str]:
    return chunk.metadata.get("qualified_names") or [chunk.metadata["qualified_name"]]


def python_pieces(text: str, target: int = 100_000, tokenizer=SIMPLE) -> list[tuple[str, str, str]]:
    """(content, kind, name) of each piece, before packing."""
    lines = line_starts(text)
    outline = python_outline(text, lines)
    assert outline is not None
    tokens = code.TokenStarts(tokenizer.token_starts(text))
    pieces = code.python_pieces(text, lines, outline, 0, len(text), "", -1, tokens, target)
    return [(text[p.start:p.end], p.kind, p.name) for p in pieces]


def expected_count(text: str, starts: list[int], chunk: Chunk) -> int:
    """Tokens starting inside the chunk, plus the one its start cuts into."""
    first = bisect_left(starts, chunk.start_char)
    partial = 0 if first < len(starts) and starts[first] == chunk.start_char else 1
    return bisect_left(starts, chunk.end_char) - first + partial


def check(text: str, spec: ChunkSpec, tokenizer=SIMPLE) -> list[Chunk]:
    """Valid, rebuilding, deterministic chunks within the target, with complete metadata."""
    chunks = CodeChunker().chunk(text, spec, tokenizer)
    assert chunk_problem(text, chunks) is None
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert CodeChunker().chunk(text, spec, tokenizer) == chunks
    starts = tokenizer.token_starts(text)
    for chunk in chunks:
        assert chunk.token_count == expected_count(text, starts, chunk)
        single_character = len(set(starts[bisect_left(starts, chunk.start_char):
                                          bisect_left(starts, chunk.end_char)]) | {chunk.start_char}) == 1
        assert chunk.token_count <= spec.target_tokens or single_character
        assert chunk.metadata["kind"] in KINDS and chunk.metadata["qualified_name"]
        assert chunk.metadata["language"] == chunks[0].metadata["language"]
        assert 1 <= chunk.metadata["start_line"] <= chunk.metadata["end_line"]
        if "qualified_names" in chunk.metadata:
            assert len(chunk.metadata["qualified_names"]) > 1 and "part" not in chunk.metadata
        json.dumps(chunk.metadata)
    return chunks


def territories(text: str) -> list[tuple[str, int, int]]:
    """(name, start, end) of each top-level statement's share of the text: from its first line (with
    decorators and the column-0 comment lines right above it) to the next one's; "module-level" for
    other statements and for what comes before the first. Lines by Python's own universal newlines."""
    lines = io.StringIO(text, newline="").readlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    heads, previous_end = [(MODULE, 0)], 0
    for node in ast.parse(text.removeprefix("\ufeff")).body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        if first >= previous_end:  # not on the line where the previous statement ends
            while first > previous_end and lines[first - 1].startswith("#"):
                first -= 1
            definition = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            heads.append((node.name if definition else MODULE, offsets[first]))
        previous_end = node.end_lineno
    ends = [start for _, start in heads[1:]] + [len(text)]
    return [(name, start, end) for (name, start), end in zip(heads, ends) if start < end]


def collapse(names: list[str]) -> list[str]:
    return [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]


def check_qualified_names(text: str, chunks: list[Chunk]) -> None:
    """Each chunk names exactly the top-level statements whose share it overlaps, in order; a member's
    name is ``Class.member`` for a real member of that class."""
    shares = territories(text)
    tree = ast.parse(text.removeprefix("\ufeff"))
    members = {(c.name, m.name) for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body
               if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for chunk in chunks:
        assert chunk.metadata["language"] == "python"
        named = collapse([n.split(".")[0] for n in names_of(chunk)])
        inside = collapse([name for name, start, end in shares if start < chunk.end_char and chunk.start_char < end])
        assert named == inside, (chunk.start_char, chunk.end_char, chunk.metadata)
        for name in names_of(chunk):
            if "." in name:
                assert tuple(name.split(".")[:2]) in members, name
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    assert defined <= {n.split(".")[0] for chunk in chunks for n in names_of(chunk)}


# ---- Python -----------------------------------------------------------------------------------------

def test_python_pieces_start_at_definitions_with_their_decorators_and_comments() -> None:
    pieces = python_pieces(PYTHON)
    assert [(kind, name) for _, kind, name in pieces] == [
        ("preamble", MODULE), ("preamble", MODULE), ("preamble", MODULE), ("preamble", MODULE),
        ("preamble", MODULE), ("preamble", MODULE), ("function", "add"), ("function", "fetch"),
        ("class", "Café"), ("function", "東京"), ("statements", MODULE)]
    contents = {name: content for content, _, name in pieces}
    assert contents["add"].startswith("# Adds things.\n# Two comment lines.\n@functools.cache\n@decorate")
    assert contents["add"].endswith("return helper(a) + b\n\n\n")  # nested helper stays inside
    assert contents["Café"].startswith("@dataclass(frozen=True)\nclass Café")
    assert pieces[0][0].startswith("#!/usr/bin/env python3\n\"\"\"Inventory")


def test_a_class_longer_than_the_target_is_cut_at_its_methods() -> None:
    pieces = python_pieces(PYTHON, target=30)
    cafe = [(kind, name) for _, kind, name in pieces if name.startswith("Café")]
    assert cafe == [("class", "Café"), ("class", "Café"), ("class", "Café"), ("method", "Café.price"),
                    ("method", "Café.menu"), ("class", "Café.Inner")]
    contents = {name: content for content, _, name in pieces}
    assert contents["Café.price"].startswith("    # the price\n    def price")
    assert contents["Café.menu"].startswith("    @property\n    async def menu")


def test_a_nested_class_longer_than_the_target_is_cut_again() -> None:
    pieces = python_pieces(PYTHON, target=8)
    assert ("method", "Café.Inner.deep") in [(kind, name) for _, kind, name in pieces]


def test_small_definitions_are_packed_and_list_every_name() -> None:
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(40))
    chunks = check(text, ChunkSpec(60, 10, 60))
    assert 1 < len(chunks) < 40
    assert chunks[0].metadata["qualified_names"][:2] == ["f0", "f1"]
    assert chunks[0].metadata["qualified_name"] == "f0" and chunks[0].metadata["kind"] == "function"
    assert [n for c in chunks for n in names_of(c)] == [f"f{i}" for i in range(40)]
    check_qualified_names(text, chunks)


def test_an_overlong_function_is_cut_into_windows_that_keep_its_name() -> None:
    body = "".join(f"    total += {i}  # step {i}\n" for i in range(200))
    text = f"import os\n\n\ndef long_one(total):\n{body}    return total\n\n\ndef short():\n    pass\n"
    chunks = check(text, ChunkSpec(50, 10, 50))
    parts = [c for c in chunks if c.metadata["qualified_name"] == "long_one"]
    assert len(parts) > 5 and [c.metadata["part"] for c in parts] == list(range(1, len(parts) + 1))
    assert all(c.metadata["kind"] == "function" for c in parts)
    assert parts[0].content.startswith("def long_one") and chunks[-1].metadata["qualified_name"] == "short"
    check_qualified_names(text, chunks)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("target", [12, 40, 200, 5_000])
def test_the_sample_keeps_its_names_whatever_the_line_endings(newline: str, target: int) -> None:
    text = PYTHON.replace("\n", newline)
    chunks = check(text, ChunkSpec(target, min(4, target - 1), target))
    check_qualified_names(text, chunks)


def test_a_byte_order_mark_form_feeds_and_tabs_are_python_too() -> None:
    text = "\ufeff# coding: utf-8\nimport os\n\x0c\ndef f():\n\treturn 'é'\n\x0c\nclass K:\n\tx = 1\n"
    chunks = check(text, ChunkSpec(6, 1, 6))
    check_qualified_names(text, chunks)


def test_cuts_inside_strings_and_brackets_are_retried_with_more_text() -> None:
    fake = "".join(f"def fake{i}():\n    pass\nclass Fake{i}:\n    x = (\n1)\n" for i in range(30))
    text = (f"import os\n\nDOC = '''\n{fake}'''\n\nTABLE = [\nx,\ny\n]\n\ndef real():\n    return DOC\n\n"
            f"x = 1 + \\\n2\nclass Real:\n    pass\nOPTIONS = dict(\na=1,\nb = 2)\n")
    expected = [(type(n).__name__, n.lineno, n.end_lineno) for n in ast.parse(text).body]
    for block_chars in (1, 7, 50, 10_000):
        outline = python_outline(text, line_starts(text), block_chars)
        assert outline is not None
        assert [(n.kind, n.line + 1, n.last + 1) for n in outline] == [
            ({"FunctionDef": "function", "ClassDef": "class"}.get(kind, "statement"), line, last)
            for kind, line, last in expected]
    check_qualified_names(text, check(text, ChunkSpec(10, 2, 10)))


def test_not_python_when_any_block_fails() -> None:
    text = "def good():\n    pass\n" * 50 + "def bad(:\n    pass\n"
    assert python_outline(text, line_starts(text), 20) is None
    chunks = check(text, ChunkSpec(40, 4, 40))
    assert chunks[0].metadata["language"] == "python"  # guessed: the fallback read it
    assert {n for c in chunks for n in names_of(c)} == {"good", "bad"}


def test_deep_nesting_and_null_bytes_fall_back_without_failing() -> None:
    for text in ["x = " + "(" * 5_000 + ")" * 5_000 + "\n", "x = " + "-" * 200_000 + "1\n", "def f():\x00\n"]:
        check(text, ChunkSpec(64, 8, 64))


def test_the_garbage_collector_is_back_as_it_was() -> None:
    CodeChunker().chunk(PYTHON, ChunkSpec(30, 4, 30), SIMPLE)
    assert gc.isenabled()
    gc.disable()
    try:
        CodeChunker().chunk(PYTHON, ChunkSpec(30, 4, 30), SIMPLE)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_bad_spec_is_refused() -> None:
    with pytest.raises(ValidationError):
        CodeChunker().chunk("x = 1\n", ChunkSpec(10, 10, 10), SIMPLE)


def test_registers_itself() -> None:
    registered: list = []
    code.memtrove_register_chunkers(registered.append)
    assert [(c.name, c.version) for c in registered] == [("code", "2")]


# ---- other languages -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, language, names", [
    (JAVASCRIPT, "javascript", [MODULE, "fs", "add", "Cart", "handler", MODULE]),
    (GO, "go", [MODULE, MODULE, "Server", "Server.Start", "main"]),
    (RUST, "rust", [MODULE, "Point", "Point", "origin"]),
    ("#include <stdio.h>\n\n/* entry */\nint main(int argc, char **argv)\n{\n    return 0;\n}\n\n"
     "static void helper(void) {\n}\n", "c", [MODULE, "main", "helper"]),
    ("<?php\n\nfunction greet($name) {\n    return $name;\n}\n", "php", [MODULE, "greet"]),
    ("CREATE TABLE users (\n  id int\n);\n\nCREATE OR REPLACE VIEW active AS SELECT 1;\n", "sql", ["users", "active"]),
    ("Just some prose.\n\nAnother paragraph, here.\n", "unknown", [MODULE, MODULE]),
])
def test_other_languages_are_cut_at_definition_lines(text: str, language: str, names: list[str]) -> None:
    assert guess_language(text) == language
    pieces = line_pieces(text)
    assert [p.name for p in pieces] == names
    assert "".join(text[p.start:p.end] for p in pieces) == text
    chunks = check(text, ChunkSpec(6, 1, 6))
    assert {c.metadata["language"] for c in chunks} == {language}


def test_comments_and_attributes_above_a_definition_belong_to_it() -> None:
    pieces = {p.name: RUST[p.start:p.end] for p in line_pieces(RUST)}
    assert pieces["Point"].startswith("impl fmt::Display")  # the later piece of the same name
    starts = [RUST[p.start:p.end].split("\n")[0] for p in line_pieces(RUST)]
    assert starts == ["use std::fmt;", "/// A point.", "impl fmt::Display for Point {",
                      "pub(crate) fn origin() -> Point {"]
    js = {p.name: JAVASCRIPT[p.start:p.end] for p in line_pieces(JAVASCRIPT)}
    assert js["add"].startswith("/**\n * Adds two numbers.\n */\nfunction add")
    go = {p.name: GO[p.start:p.end] for p in line_pieces(GO)}
    assert go["Server.Start"].startswith("// Start starts the server.\nfunc (s *Server)")


def test_closing_lines_and_indented_lines_never_start_a_piece() -> None:
    text = "fn a() {\n    let x = 1;\n\n    let y = 2;\n\n}\n\nend\n\nfn b() {}\n"
    assert [(text[p.start:p.end].split("\n")[0], p.name) for p in line_pieces(text)] == [
        ("fn a() {", "a"), ("fn b() {}", "b")]


# ---- properties -------------------------------------------------------------------------------------

_NAME_CHARS = "abcxyz_éßΩω東京ñ"
identifiers = st.text(_NAME_CHARS, min_size=1, max_size=6).map(lambda s: unicodedata.normalize("NFKC", s)).filter(
    lambda s: s.isidentifier() and not keyword.iskeyword(s) and not keyword.issoftkeyword(s))
strings = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\\\"'"),
                  max_size=12)


@st.composite
def bodies(draw, indent: str) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["return", "assign", "string", "comment", "blank", "if", "nested", "call"]))
        value = draw(strings)
        name = draw(identifiers)
        lines.append({
            "return": f"{indent}return {json.dumps(value, ensure_ascii=False)}",
            "assign": f"{indent}{name} = [{json.dumps(value, ensure_ascii=False)},\n{indent}    {len(value)}]",
            "string": f'{indent}"""{value}\ndef not_{name}():\n"""',
            "comment": f"{indent}# {value}",
            "blank": "",
            "if": f"{indent}if {name}:\n{indent}    pass",
            "nested": f"{indent}def {name}():\n{indent}    return 1",
            "call": f"{indent}print({json.dumps(value, ensure_ascii=False)})",
        }[kind])
    return "\n".join(lines) + f"\n{indent}pass"


@st.composite
def definitions(draw, indent: str = "", depth: int = 0) -> str:
    head = "".join(f"{indent}# {draw(strings)}\n" for _ in range(draw(st.integers(0, 2))))
    head += "".join(f"{indent}@{draw(identifiers)}{draw(st.sampled_from(['', '(1)', '.x']))}\n"
                    for _ in range(draw(st.integers(0, 2))))
    name = draw(identifiers)
    if depth < 2 and draw(st.booleans()):
        members = [draw(definitions(indent + "    ", depth + 1)) for _ in range(draw(st.integers(0, 4)))]
        attribute = f'{indent}    """{draw(strings)}"""\n{indent}    size = {draw(st.integers())}\n'
        return f"{head}{indent}class {name}(object):\n{attribute}" + "\n".join(members)
    prefix = draw(st.sampled_from(["def", "async def"]))
    return f"{head}{indent}{prefix} {name}(a, *b):\n{draw(bodies(indent + '    '))}\n"


statements = st.one_of(
    st.builds(lambda n, v: f"{n} = {json.dumps(v, ensure_ascii=False)}\n", identifiers, strings),
    st.sampled_from(["import os\n", "from a.b import (\n    c,\n    d,\n)\n", "if True:\n    pass\nelse:\n    x = 1\n",
                     "x = 1; y = 2\n", "try:\n    pass\nexcept E:\n    pass\nfinally:\n    pass\n",
                     '"""Doc\nclass Fake:\n"""\n', "# just a comment\n", "\n", "x = (1 +\n2)\n", "y = 1 + \\\n2\n"]))
modules = st.builds(lambda head, items, newline: ("\n".join(head + items)).replace("\n", newline),
                    st.lists(statements, max_size=3),
                    st.lists(st.one_of(definitions(), statements), min_size=1, max_size=10),
                    st.sampled_from(["\n", "\n", "\r\n", "\r"]))
specs = st.builds(lambda target, overlap: ChunkSpec(target, min(overlap, target - 1), target),
                  st.sampled_from([4, 16, 64, 300]), st.integers(0, 8))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def parses(text: str) -> bool:
    """Whether ``ast`` reads the text (a generated name can clash with syntax in rare cases)."""
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


@settings(max_examples=150, **_SETTINGS)
@given(modules, specs)
def test_generated_modules_are_cut_at_their_definitions(text: str, spec: ChunkSpec) -> None:
    assume(parses(text))
    chunks = check(text, spec)
    check_qualified_names(text, chunks)


@settings(max_examples=40, **_SETTINGS)
@given(modules, specs)
def test_generated_modules_with_cl100k(text: str, spec: ChunkSpec) -> None:
    assume(parses(text))
    check_qualified_names(text, check(text, spec, tiktoken_tokenizer()))


@settings(max_examples=50, **_SETTINGS)
@given(modules, st.integers(1, 200))
def test_the_outline_of_small_blocks_is_the_outline_of_the_whole(text: str, block_chars: int) -> None:
    whole = python_outline(text, line_starts(text), 10**9)
    assert python_outline(text, line_starts(text), block_chars) == whole


code_lines = st.sampled_from([
    "function f(a) {", "}", "def g(x):", "    return x", "class K {", "fn main() {", "func (s *S) Run() {",
    "impl A for B {", "const h = (x) => {", "pub struct P;", "#include <x.h>", "// comment", "/** doc", " * more",
    " */", "@decorator", "#[derive(Debug)]", "end", "", "   ", "\t", "int main(void)", "CREATE TABLE t (", "x = 1",
    "type T struct {", "interface I {", "😀 东京 e\u0301", "\x0c", "\ufeff"])
mixed_texts = st.lists(st.one_of(code_lines, st.text(max_size=30)), min_size=1, max_size=60).flatmap(
    lambda lines: st.sampled_from(["\n", "\r\n", "\r", "\n\n"]).map(lambda newline: newline.join(lines)))


@settings(max_examples=200, **_SETTINGS)
@given(st.one_of(mixed_texts, st.text(st.characters(blacklist_categories=("Cs",)), max_size=2000)), specs)
def test_any_text_is_chunked_validly(text: str, spec: ChunkSpec) -> None:
    chunks = check(text, spec)
    assert (chunks == []) == (text == "")


@settings(max_examples=60, **_SETTINGS)
@given(mixed_texts, specs)
def test_any_text_with_cl100k(text: str, spec: ChunkSpec) -> None:
    check(text, spec, tiktoken_tokenizer())


# ---- real documents ---------------------------------------------------------------------------------

def _python_files() -> list[Path]:
    mine = [p for folder in ("domain", "adapters", "plugins", "config", "entrypoints", "tests")
            for p in sorted((REPO / folder).rglob("*.py"))]
    stdlib = sorted((STDLIB / "json").glob("*.py")) + [STDLIB / name for name in (
        "ast.py", "dataclasses.py", "functools.py", "typing.py", "inspect.py", "tokenize.py", "argparse.py")]
    return mine + stdlib


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(p.parents[1])))
@pytest.mark.parametrize("target", [64, 900])
def test_real_python_files(path: Path, target: int) -> None:
    if not path.exists():
        pytest.skip("removed since collection")
    with path.open(encoding="utf-8", newline="") as file:  # line endings as they are
        text = file.read()
    chunks = check(text, ChunkSpec(target, target // 8, target), tiktoken_tokenizer())
    try:
        ast.parse(text)
    except SyntaxError:
        return  # another session may be in the middle of writing this file
    check_qualified_names(text, chunks)


def test_real_files_joined_into_one_big_module(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in _python_files() if p.is_relative_to(STDLIB))
    assert len(text) > max(4 * code.BLOCK_CHARS, code.THREAD_CHARS)
    spec = ChunkSpec(900, 100, 900)
    chunks = check(text, spec, tiktoken_tokenizer())  # tokenized in a second thread
    check_qualified_names(text, chunks)
    monkeypatch.setattr(code, "THREAD_CHARS", len(text) + 1)
    assert CodeChunker().chunk(text, spec, tiktoken_tokenizer()) == chunks  # the same in one thread
