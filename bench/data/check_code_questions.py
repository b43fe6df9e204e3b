"""Check code_questions.json against the unpacked requests/flask sdists.

Run:  python bench/data/check_code_questions.py [SDIST_DIR]

SDIST_DIR (default /tmp/sdists) must contain the unpacked sdists
requests-2.32.3/ and flask-3.0.3/, e.g. made with

    pip download --no-binary :all: --no-deps requests==2.32.3 flask==3.0.3 -d .
    tar xzf requests-2.32.3.tar.gz && tar xzf flask-3.0.3.tar.gz

For every question this parses the answer's file with ``ast``, finds the
symbol by qualified name (walking nested classes and functions), checks that
``line`` is the line of its ``def``/``class`` keyword, and checks that the
question does not give the answer away by containing the symbol's last name
part as written, lower-cased, or split into space-separated words
(snake_case and camelCase).  It also checks ids, fields, per-file and
per-corpus limits.  Every problem is printed; the exit status is 1 if there
is any.  Counts per corpus and per file are printed too.  Standard library
only.
"""

import ast
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
JSON_PATH = os.path.join(HERE, "code_questions.json")
DEFAULT_SDIST_DIR = "/tmp/sdists"

# corpus name -> directory of the unpacked sdist (relative to SDIST_DIR)
ROOTS = {"requests": "requests-2.32.3", "flask": "flask-3.0.3"}
PINS = {"requests": "requests==2.32.3", "flask": "flask==3.0.3"}

MIN_PER_CORPUS = 30
MAX_PER_FILE = 4
FIELDS = ("id", "corpus", "question", "path", "symbol", "line")

DEF_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def symbol_index(tree):
    """Map every qualified name (Outer.Inner.method) to a list of def/class
    nodes with that name, in source order (a name can be defined twice, e.g.
    a property getter and setter)."""
    index = collections.defaultdict(list)

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, DEF_NODES):
                qual = prefix + child.name
                index[qual].append(child)
                walk(child, qual + ".")
            elif not isinstance(child, (ast.Lambda,)):
                # defs inside if/try/with blocks at the same nesting level
                walk_block(child, prefix)

    def walk_block(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, DEF_NODES):
                qual = prefix + child.name
                index[qual].append(child)
                walk(child, qual + ".")
            elif isinstance(child, ast.stmt) or isinstance(child, ast.excepthandler):
                walk_block(child, prefix)

    walk(tree, "")
    return index


def split_words(name):
    """'merge_environment_settings' -> ['merge', 'environment', 'settings'];
    'mergeEnvironmentSettings' / 'HTTPDigestAuth' -> camel parts; leading and
    trailing underscores (dunders, private names) are dropped."""
    words = []
    for part in re.split(r"_+", name):
        if not part:
            continue
        words.extend(
            re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", part)
        )
    return [w.lower() for w in words]


def leaks(question, last):
    """Return the forms of the answer's name that occur in the question.

    A form matches only as a whole token: it may not be glued to further
    letters/digits/underscores (as written, lower-case) or letters/digits
    (space-separated words, which may also be joined by '-' or '_')."""
    found = []
    ident_edge_l = r"(?<![A-Za-z0-9_])"
    ident_edge_r = r"(?![A-Za-z0-9_])"
    if re.search(ident_edge_l + re.escape(last) + ident_edge_r, question):
        found.append(f"as written {last!r}")
    low = last.lower()
    if re.search(ident_edge_l + re.escape(low) + ident_edge_r, question.lower()):
        found.append(f"lower-case {low!r}")
    words = split_words(last)
    if words:
        pattern = (
            r"(?<![A-Za-z0-9])"
            + r"[\s_\-]+".join(re.escape(w) for w in words)
            + r"(?![A-Za-z0-9])"
        )
        if re.search(pattern, question, flags=re.IGNORECASE):
            found.append(f"words {' '.join(words)!r}")
    return found


def main(argv):
    sdist_dir = argv[1] if len(argv) > 1 else DEFAULT_SDIST_DIR
    problems = []

    with open(JSON_PATH, encoding="utf-8") as f:
        data = json.load(f)

    for key in ("about", "corpora", "questions"):
        if key not in data:
            problems.append(f"top level: missing key {key!r}")
    if data.get("corpora") != PINS:
        problems.append(f"top level: corpora is {data.get('corpora')!r}, expected {PINS!r}")
    questions = data.get("questions", [])

    per_corpus = collections.Counter()
    per_file = collections.Counter()
    seen_ids = set()
    seen_answers = {}
    trees = {}

    for i, q in enumerate(questions):
        qid = q.get("id", f"#{i}")
        where = f"{qid}:"
        missing = [k for k in FIELDS if k not in q]
        if missing:
            problems.append(f"{where} missing fields {missing}")
            continue
        extra = sorted(set(q) - set(FIELDS))
        if extra:
            problems.append(f"{where} unexpected fields {extra}")
        if qid in seen_ids:
            problems.append(f"{where} duplicate id")
        seen_ids.add(qid)

        corpus, path, symbol, line = q["corpus"], q["path"], q["symbol"], q["line"]
        text = q["question"]
        if corpus not in ROOTS:
            problems.append(f"{where} unknown corpus {corpus!r}")
            continue
        per_corpus[corpus] += 1
        per_file[(corpus, path)] += 1

        key = (corpus, path, symbol)
        if key in seen_answers:
            problems.append(f"{where} same answer as {seen_answers[key]} ({path} {symbol})")
        seen_answers[key] = qid

        if not isinstance(text, str) or len(text.split()) < 5:
            problems.append(f"{where} question too short or not a string")
        if not path.endswith(".py"):
            problems.append(f"{where} path {path!r} is not a .py file")
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            problems.append(f"{where} line {line!r} is not a positive int")

        full = os.path.join(sdist_dir, ROOTS[corpus], path)
        if full not in trees:
            try:
                with open(full, "rb") as f:
                    trees[full] = ast.parse(f.read(), filename=full)
            except OSError as e:
                trees[full] = None
                problems.append(f"{where} cannot read {full}: {e.strerror}")
            except SyntaxError as e:
                trees[full] = None
                problems.append(f"{where} cannot parse {full}: {e}")
        tree = trees[full]
        if tree is not None:
            nodes = symbol_index(tree).get(symbol)
            if not nodes:
                problems.append(f"{where} symbol {symbol!r} not found in {path}")
            else:
                lines = [n.lineno for n in nodes]
                if line not in lines:
                    problems.append(
                        f"{where} {symbol} is defined at line(s) {lines}, json says {line}"
                    )
                elif len(nodes) > 1:
                    problems.append(
                        f"{where} {symbol} is defined {len(nodes)} times in {path} "
                        f"(lines {lines}); pick a symbol with one definition"
                    )

        last = symbol.split(".")[-1]
        for form in leaks(text, last):
            problems.append(f"{where} question contains the answer's name ({form}): {text}")

    for corpus in ROOTS:
        if per_corpus[corpus] < MIN_PER_CORPUS:
            problems.append(
                f"corpus {corpus}: {per_corpus[corpus]} questions, need at least {MIN_PER_CORPUS}"
            )
    for (corpus, path), n in sorted(per_file.items()):
        if n > MAX_PER_FILE:
            problems.append(f"{corpus} {path}: {n} questions, at most {MAX_PER_FILE} allowed")

    print(f"questions: {len(questions)}")
    print("per corpus:")
    for corpus in ROOTS:
        files = sum(1 for (c, _p) in per_file if c == corpus)
        print(f"  {corpus:10s} {per_corpus[corpus]:3d} questions in {files} files")
    print("per file:")
    for (corpus, path), n in sorted(per_file.items()):
        print(f"  {n:2d}  {corpus}: {path}")

    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nOK: no problems")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
