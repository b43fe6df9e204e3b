"""Snippets: a substring of the text with ellipses, between words, within the width, around a match."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from domain.search.lexical import analyse
from domain.search.snippets import ELLIPSIS, root, snippet, span

WORDS = ["heap", "sorted", "sorting", "list", "insert", "inserting", "allergic", "allergies", "peanuts", "the",
         "a", "of", "Order", "ordering", "café", "naïve", "x1", "snake_case", "queue", "priority"]
SEPARATORS = [" ", " ", " ", ", ", ". ", "\n", "\n\n", " (", ") ", ": ", " -- ", "\t", ".\n"]
word = st.sampled_from(WORDS) | st.text(st.characters(categories=("Ll", "Lu", "Nd")), min_size=1, max_size=12)
text = st.lists(st.tuples(word, st.sampled_from(SEPARATORS)), max_size=120).map(
    lambda pairs: "".join(w + s for w, s in pairs))
query = st.lists(st.sampled_from(WORDS) | word, min_size=1, max_size=5).map(" ".join)
widths = st.integers(min_value=30, max_value=400)


def is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def matches_a_query_word(body: str, words: tuple[str, ...]) -> bool:
    import re
    roots = [root(w) for w in words]
    return any(w.lower() == r or root(w) == r or (len(r) >= 3 and w.lower().startswith(r))
               for w in re.findall(r"\w+", body) for r in roots)


@settings(max_examples=400, deadline=None)
@given(text, query, widths, st.booleans(), st.booleans())
@example("Caroline is allergic to peanuts.", "Does Caroline have allergies?", 40, False, False)
@example("ructure of the heap is kept sorted while inserting", "keep a list sorted", 30, True, True)
def test_snippet_properties(content: str, q: str, width: int, open_start: bool, open_end: bool) -> None:
    words = analyse(q).words
    start, end = span(content, words, width, open_start, open_end)
    shown = snippet(content, words, width, open_start, open_end)
    body = content[start:end]
    # a substring of the content, with ellipses exactly where text was left out
    head, tail = start > 0 or open_start, end < len(content) or open_end
    assert shown == ELLIPSIS * head + body + ELLIPSIS * tail
    assert len(body) <= width
    # never starts or ends inside a word; never shows a word an open end may have cut
    assert start == 0 or not (is_word(content[start - 1]) and is_word(content[start])), (start, shown)
    assert end == len(content) or not (is_word(content[end - 1]) and is_word(content[end])), (end, shown)
    if open_start and body:  # the first whitespace-separated token may be cut: it is skipped
        assert any(c.isspace() for c in content[:start]), shown
    if open_end and body:
        assert any(c.isspace() for c in content[end:]), shown
    assert body == body.strip()
    # holds a matched word whenever the whole-word part of the content has one
    if matches_a_query_word(inner_region(content, open_start, open_end), words):
        assert matches_a_query_word(body, words), (q, shown)


def inner_region(content: str, open_start: bool, open_end: bool) -> str:
    lo, hi = 0, len(content)
    if open_start:
        while lo < hi and not content[lo].isspace():
            lo += 1
    if open_end:
        while hi > lo and not content[hi - 1].isspace():
            hi -= 1
    return content[lo:hi]


def test_the_snippet_centres_on_the_match_not_the_beginning() -> None:
    filler = "Unrelated words about the weather and the harbour fill this part of the text. " * 8
    content = filler + "Caroline is allergic to peanuts and carries a pen. " + filler
    shown = snippet(content, analyse("Does Caroline have any food allergies?").words, 120)
    assert "Caroline is allergic to peanuts" in shown
    assert shown.startswith(ELLIPSIS) and shown.endswith(ELLIPSIS)
    assert shown[1:].startswith("Caroline"), "starts at the sentence holding the match"


def test_a_short_text_is_shown_whole() -> None:
    fact = "[3 July 2023] Caroline is allergic to peanuts."
    assert snippet(fact, analyse("peanut allergy").words) == fact
    assert snippet(fact, analyse("nothing matches here").words) == fact


def test_a_chunk_never_shows_its_cut_words() -> None:
    chunk = "ructure of the queue keeps the smallest item first and the larg"
    shown = snippet(chunk, ["smallest"], 200, open_start=True, open_end=True)
    assert shown == f"{ELLIPSIS}of the queue keeps the smallest item first and the{ELLIPSIS}"


@pytest.mark.parametrize(("query_word", "text_word"), [
    ("sorting", "sorted"), ("allergies", "allergic"), ("running", "runs"), ("families", "family"),
    ("Insert", "INSERTING"), ("peanut", "peanuts")])
def test_stemmed_words_match(query_word: str, text_word: str) -> None:
    content = f"Some filler first. Then {text_word} appears here."
    start, end = span(content, [query_word.lower()], 20)
    assert text_word in content[start:end]


def test_a_word_longer_than_the_width_is_cut_with_ellipses() -> None:
    blob = "x" * 500
    shown = snippet(blob, ["y"], 100)
    assert shown == "x" * 100 + ELLIPSIS


def test_query_words_match_by_the_stem_prefix_rule_first_query_word_first() -> None:
    """QueryWords against the rule as written: a text word matches a query word when it is the
    word's root, its own root is, or (for a root of three letters or more) it starts with it."""
    import random
    import re

    from domain.search.snippets import QueryWords

    def rule(token: str, roots: list[str]) -> int | None:
        word = token.lower()
        for index, stem in enumerate(roots):
            if word == stem or root(word) == stem or (len(stem) >= 3 and word.startswith(stem)):
                return index
        return None

    text = ("Sorting sorted sorts; allergies allergic; happiness happy; running runs ran; stopped stop; "
            "is as an ox OX Ox; Café CAFÉ naïve NAÏVE; İstanbul; ﬁle file; Straße STRASSE; 東京 東京都; x1 X1y")
    tokens = re.findall(r"\w+", text)
    rng = random.Random(7)
    for _ in range(400):
        words = [rng.choice(tokens) for _ in range(rng.randint(1, 5))]
        matched = QueryWords(words)
        for token in tokens:
            assert matched(token) == rule(token, [root(w) for w in words]), (words, token)
