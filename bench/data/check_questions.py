"""Check python_docs_questions.json against the Python library docs corpus.

Run:  python bench/data/check_questions.py [path/to/questions.json]

Verifies the rules the question set was written under and prints every
problem found; exits 1 if there is any.  Also prints the number of questions
per document and the corpus size.  Standard library only.
"""

import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_JSON = os.path.join(HERE, "python_docs_questions.json")
DOCS_DIR = os.environ.get(
    "PYTHON_DOCS_DIR", "/usr/share/doc/python3.11/html/_sources/library"
)

MB = 1_000_000
MIN_BYTES, MAX_BYTES = 2.0 * MB, 2.8 * MB
MIN_CORPUS_FILES, MAX_CORPUS_FILES = 80, 90
N_QUESTIONS = 100
MAX_PER_DOC = 3
MIN_DOCS = 45
MIN_ANSWER, MAX_ANSWER = 60, 300

DOTTED = re.compile(r"\b[A-Za-z_]\w*\.[A-Za-z_]\w*")
UNDERSCORE_IDENT = re.compile(r"\b\w*_\w*\b")
CALL = re.compile(r"\w\(")


def collapse(text):
    return " ".join(text.split())


def module_names(doc):
    """Words that name the module a document describes.

    json.rst.txt -> {"json"}; asyncio-task.rst.txt -> {"asyncio"};
    logging.handlers.rst.txt -> {"logging.handlers", "handlers"}.
    """
    base = doc[: -len(".rst.txt")] if doc.endswith(".rst.txt") else doc
    base = base.split("-")[0]
    return {base, base.split(".")[-1]}


def main(argv):
    path = argv[1] if len(argv) > 1 else DEFAULT_JSON
    problems = []

    def problem(msg):
        problems.append(msg)

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"PROBLEM: cannot load {path}: {exc}")
        return 1

    for key in ("about", "corpus", "questions"):
        if key not in data:
            problem(f"missing top-level key {key!r}")
    if problems:
        for p in problems:
            print("PROBLEM:", p)
        return 1

    if not isinstance(data["about"], str) or not data["about"].strip():
        problem("'about' must be a non-empty string")

    # Corpus.
    corpus = data["corpus"]
    if len(set(corpus)) != len(corpus):
        problem("corpus lists a file more than once")
    if not (MIN_CORPUS_FILES <= len(corpus) <= MAX_CORPUS_FILES):
        problem(f"corpus has {len(corpus)} files, expected "
                f"{MIN_CORPUS_FILES}-{MAX_CORPUS_FILES}")
    texts = {}
    total_bytes = 0
    for name in corpus:
        full = os.path.join(DOCS_DIR, name)
        if not os.path.isfile(full):
            problem(f"corpus file missing: {full}")
            continue
        total_bytes += os.path.getsize(full)
        with open(full, encoding="utf-8") as f:
            texts[name] = collapse(f.read())
    if not (MIN_BYTES <= total_bytes <= MAX_BYTES):
        problem(f"corpus size {total_bytes} bytes outside "
                f"{MIN_BYTES:.0f}-{MAX_BYTES:.0f}")

    # Questions.
    questions = data["questions"]
    if len(questions) != N_QUESTIONS:
        problem(f"{len(questions)} questions, expected {N_QUESTIONS}")
    ids = [q.get("id") for q in questions]
    dup_ids = [i for i, c in collections.Counter(ids).items() if c > 1]
    if dup_ids:
        problem(f"duplicate ids: {dup_ids}")
    expected_ids = [f"p{i:03d}" for i in range(1, len(questions) + 1)]
    if ids != expected_ids:
        problem("ids are not p001..pNNN in order")

    per_doc = collections.Counter()
    splits = collections.Counter()
    half = len(questions) // 2
    for pos, q in enumerate(questions):
        qid = q.get("id", f"#{pos}")
        for key in ("id", "doc", "question", "answer", "split"):
            if not isinstance(q.get(key), str) or not q.get(key).strip():
                problem(f"{qid}: field {key!r} missing or empty")
        doc, question = q.get("doc", ""), q.get("question", "")
        answer = collapse(q.get("answer", ""))
        split = q.get("split")
        per_doc[doc] += 1
        splits[split] += 1
        want_split = "dev" if pos < half else "test"
        if split != want_split:
            problem(f"{qid}: split {split!r}, expected {want_split!r} "
                    f"(first half dev, second half test)")

        if doc not in corpus:
            problem(f"{qid}: doc {doc} not in corpus")
        if not (MIN_ANSWER <= len(answer) <= MAX_ANSWER):
            problem(f"{qid}: answer length {len(answer)} outside "
                    f"{MIN_ANSWER}-{MAX_ANSWER}")
        if doc in texts:
            count = texts[doc].count(answer)
            if count != 1:
                problem(f"{qid}: answer occurs {count} times in {doc} "
                        f"(expected exactly 1)")
        elsewhere = [n for n, t in texts.items() if n != doc and answer in t]
        if elsewhere:
            problem(f"{qid}: answer also occurs in {', '.join(elsewhere)}")

        if "`" in question:
            problem(f"{qid}: question contains a backtick")
        m = DOTTED.search(question)
        if m:
            problem(f"{qid}: question contains dotted name {m.group(0)!r}")
        m = UNDERSCORE_IDENT.search(question)
        if m:
            problem(f"{qid}: question contains identifier with underscore "
                    f"{m.group(0)!r}")
        m = CALL.search(question)
        if m:
            problem(f"{qid}: question contains a call-like identifier "
                    f"followed by '('")
        for name in module_names(doc):
            if re.search(r"\b" + re.escape(name) + r"\b", question, re.I):
                problem(f"{qid}: question names its module {name!r}")

    if splits.get("dev", 0) != half or splits.get("test", 0) != len(questions) - half:
        problem(f"splits are {dict(splits)}, expected {half} dev / "
                f"{len(questions) - half} test")
    over = {d: c for d, c in per_doc.items() if c > MAX_PER_DOC}
    if over:
        problem(f"documents with more than {MAX_PER_DOC} questions: {over}")
    if len(per_doc) < MIN_DOCS:
        problem(f"questions use {len(per_doc)} documents, expected >= {MIN_DOCS}")

    # Report.
    print("Questions per document:")
    for doc, count in sorted(per_doc.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {count}  {doc}")
    unused = sorted(set(corpus) - set(per_doc))
    print(f"Documents with questions: {len(per_doc)}; distractor-only "
          f"documents: {len(unused)} ({', '.join(unused)})")
    print(f"Corpus: {len(corpus)} files, {total_bytes} bytes "
          f"({total_bytes / MB:.3f} MB)")
    print(f"Questions: {len(questions)} ({dict(splits)})")
    if problems:
        print(f"{len(problems)} problem(s):")
        for p in problems:
            print("PROBLEM:", p)
        return 1
    print("OK: no problems found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
