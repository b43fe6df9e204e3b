"""tree-sitter reading of source files (plugins/chunkers/code_tree*.py): each language's outline (symbols
and imports) exactly, the chunkers' pieces and chunks (tiling, metadata, lines, scopes cut at their members),
the fallback to line pieces on syntax errors, non-ASCII offsets, lazy grammar loading and a missing grammar."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from domain.chunk_checks import chunk_problem
from domain.code.model import SYMBOL_KINDS, language_of
from domain.errors import ValidationError
from domain.model import ChunkSpec
from domain.artifacts.usecases import reconstruct
from plugins.chunkers import code_tree
from plugins.chunkers.code import CodeChunker, TokenStarts, assemble
from plugins.chunkers.code_lines import MODULE, line_pieces
from plugins.chunkers.code_tree import CHUNKED, TreeChunker, outline
from plugins.testing import ChunkerContract, SimpleTokenizer

REPO = Path(__file__).resolve().parents[2]
SIMPLE = SimpleTokenizer()
PIECE_KINDS = set(SYMBOL_KINDS) | {"impl", "preamble", "statements", "definition"}

JAVA = r'''package geo;

import java.util.List;
import java.util.*;
import static java.lang.Math.hypot;

/** A shape. */
public interface Shape {
    double area();
}

public class Circle implements Shape {
    private final double r;

    public Circle(double r) {
        this.r = r;
    }

    /** Area of the circle. */
    @Override
    public double area() {
        return Math.PI * r * r;
    }

    static class Builder {
        Circle build() { return new Circle(1); }
    }

    enum Kind { SMALL, LARGE; int code() { return 1; } }
}

record Pair<A, B>(A first, B second) {
    int size() { return 2; }
}
'''
C = r'''#include <stdio.h>
#include "geo.h"

#define SQUARE(x) ((x) * (x))

void log_msg(const char *fmt, ...);
static int add(int a, int b);

/* A point. */
struct point {
    int x, y;
    int (*scale)(int);
};

typedef struct rect {
    int w, h;
} rect_t;

enum color { RED, GREEN };

/* Add two ints. */
static int add(int a, int b)
{
    return a + b;
}

double *make_array(size_t n, const char *name)
{
    return NULL;
}

int main(void) { printf("héllo\n"); return 0; }
'''
CPP = r'''#include <vector>
#include "shape.hpp"

namespace geo {
namespace detail {
int helper(int x) { return x; }
}

// A shape.
class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
};

class Circle : public Shape {
public:
    explicit Circle(double r);
    double area() const override { return 3.14 * r_ * r_; }
    double perimeter() const;
private:
    double r_;
};

template <typename T>
T twice(T v) { return v + v; }

Circle::Circle(double r) : r_(r) {}
double Circle::perimeter() const { return 2 * 3.14 * r_; }
}

int main() {
    return 0;
}
'''
GO = r'''package geo

import (
	"fmt"
	m "math"
)

import "strings"

// Point is a 2D point.
type Point struct {
	X, Y float64
}

// Shape is anything with an area.
type Shape interface {
	Area() float64
}

type Celsius float64

// Dist returns the distance.
func (p *Point) Dist(q Point) float64 {
	return m.Hypot(p.X-q.X, p.Y-q.Y)
}

func (p Point) String() string {
	return fmt.Sprintf("(%v, %v) — ünïcode", p.X, strings.TrimSpace("y"))
}

func Map[T any](xs []T, f func(T) T) []T {
	return xs
}
'''
JAVASCRIPT = r'''// Copyright 2024 — façade
import fs from 'fs';
import { join, resolve as res } from 'path';
const util = require('util');

/**
 * A shape.
 */
export class Shape extends Base {
  constructor(w, h) {
    super();
    this.w = w;
  }

  // Area of the shape.
  area() {
    return this.w * this.h;
  }

  static create() { return new Shape(1, 1); }
  onClick = (event) => { console.log(event); };
}

function outer(a, b) {
  function inner(c) { return c; }
  return inner(a) + b;
}

const double = (x) => x * 2;
export default function main() {}
'''
PYTHON = r'''"""Greeting helpers."""
import os.path as p, sys
from collections import OrderedDict, defaultdict as dd
from . import sibling
from ..pkg import *


# Adds two numbers.
def add(a: int, b: int = 2) -> int:
    """Add."""
    def inner(x):
        return x
    return a + b


@register
@other(level=2)
class Greeter(Base, metaclass=Meta):
    """Says hello."""

    def __init__(self, name):
        self.name = name

    async def greet(self, *args,
                    **kw):
        return f"héllo {self.name}"

    class Inner:
        def deep(self):
            return 1


if TYPE_CHECKING:
    def typed() -> None: ...
'''
RUST = r'''use std::collections::HashMap;
use std::io::{self, Read as R};
mod util;

/// A point in 2D.
#[derive(Debug, Clone)]
pub struct Point {
    x: f64,
    y: f64,
}

enum Shape { Circle(f64), Square(f64) }

/// Things with area.
pub trait Area {
    fn area(&self) -> f64;
    fn describe(&self) -> String {
        format!("área {}", self.area())
    }
}

impl Point {
    /// Make a point.
    pub fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }
}

impl Area for Point {
    fn area(&self) -> f64 { 0.0 }
}

pub mod geometry {
    pub fn origin() -> (f64, f64) { (0.0, 0.0) }
}

type Map = HashMap<String, Point>;

fn main() {
    let _ = Point::new(1.0, 2.0);
}
'''
TYPESCRIPT = r'''import { readFile } from "fs/promises";
import * as path from "path";
import type { Foo } from "./foo";

/** A point. */
export interface Point {
  x: number;
  dist(other: Point): number;
}

type Id = string | number;

enum Color { Red, Green }

@sealed
export class Vec implements Point {
  constructor(public x: number, public y: number) {}

  @memo
  dist(other: Point): number {
    return Math.hypot(this.x - other.x, this.y - other.y);
  }

  private static zero(): Vec { return new Vec(0, 0); }
}

export const addVec = (a: Vec, b: Vec): Vec => new Vec(a.x + b.x, a.y + b.y);

namespace Geo {
  export function area(): number { return 0; }
}

abstract class Shape {
  abstract area(): number;
}

export function scale(p: Vec, k: number): Vec;
export function scale(p: Vec, k: number): Vec { return p; }
'''
TSX = r'''import React from "react";

interface Props { name: string }

// Says hello.
export const Hello = ({ name }: Props) => <div>Hello {name}</div>;

export function App(): JSX.Element {
  return <Hello name="wörld" />;
}
'''
SOURCES = {"java": JAVA, "c": C, "cpp": CPP, "go": GO, "javascript": JAVASCRIPT, "python": PYTHON, "rust": RUST,
           "typescript": TYPESCRIPT, "tsx": TSX}

OUTLINES = {
    "java": (
        [("interface", "Shape", 8, 10), ("method", "Shape.area", 9, 9), ("class", "Circle", 12, 30),
         ("method", "Circle.Circle", 15, 17), ("method", "Circle.area", 20, 23), ("class", "Circle.Builder", 25, 27),
         ("method", "Circle.Builder.build", 26, 26), ("enum", "Circle.Kind", 29, 29),
         ("method", "Circle.Kind.code", 29, 29), ("class", "Pair", 32, 34), ("method", "Pair.size", 33, 33)],
        [("java.util", ("List",), 3), ("java.util", ("*",), 4), ("java.lang.Math", ("hypot",), 5)]),
    "c": (  # the prototype of add is dropped (the file defines it); log_msg's is kept
        [("function", "log_msg", 6, 6), ("struct", "point", 10, 13), ("type", "rect_t", 15, 17),
         ("struct", "rect", 15, 17), ("enum", "color", 19, 19), ("function", "add", 22, 25),
         ("function", "make_array", 27, 30), ("function", "main", 32, 32)],
        [("stdio.h", (), 1), ("geo.h", (), 2)]),
    "cpp": (
        [("module", "geo", 4, 30), ("module", "geo.detail", 5, 7), ("function", "geo.detail.helper", 6, 6),
         ("class", "geo.Shape", 10, 14), ("method", "geo.Shape.~Shape", 12, 12), ("method", "geo.Shape.area", 13, 13),
         ("class", "geo.Circle", 16, 23), ("method", "geo.Circle.area", 19, 19), ("function", "geo.twice", 25, 26),
         ("method", "geo.Circle.Circle", 28, 28), ("method", "geo.Circle.perimeter", 29, 29),
         ("function", "main", 32, 34)],
        [("vector", (), 1), ("shape.hpp", (), 2)]),
    "go": (
        [("struct", "Point", 11, 13), ("interface", "Shape", 16, 18), ("method", "Shape.Area", 17, 17),
         ("type", "Celsius", 20, 20), ("method", "Point.Dist", 23, 25), ("method", "Point.String", 27, 29),
         ("function", "Map", 31, 33)],
        [("fmt", (), 4), ("math", (), 5), ("strings", (), 8)]),
    "javascript": (
        [("class", "Shape", 9, 22), ("method", "Shape.constructor", 10, 13), ("method", "Shape.area", 16, 18),
         ("method", "Shape.create", 20, 20), ("method", "Shape.onClick", 21, 21), ("function", "outer", 24, 27),
         ("function", "double", 29, 29), ("function", "main", 30, 30)],
        [("fs", ("fs",), 2), ("path", ("join", "resolve"), 3), ("util", (), 4)]),
    "python": (
        [("function", "add", 9, 13), ("class", "Greeter", 16, 30), ("method", "Greeter.__init__", 21, 22),
         ("method", "Greeter.greet", 24, 26), ("class", "Greeter.Inner", 28, 30),
         ("method", "Greeter.Inner.deep", 29, 30), ("function", "typed", 34, 34)],
        [("os.path", (), 2), ("sys", (), 2), ("collections", ("OrderedDict", "defaultdict"), 3),
         (".", ("sibling",), 4), ("..pkg", ("*",), 5)]),
    "rust": (
        [("struct", "Point", 6, 10), ("enum", "Shape", 12, 12), ("trait", "Area", 15, 20),
         ("method", "Area.area", 16, 16), ("method", "Area.describe", 17, 19), ("method", "Point.new", 24, 26),
         ("method", "Point.area", 30, 30), ("module", "geometry", 33, 35), ("function", "geometry.origin", 34, 34),
         ("type", "Map", 37, 37), ("function", "main", 39, 41)],
        [("std::collections", ("HashMap",), 1), ("std::io", ("self", "Read"), 2), ("util", (), 3)]),
    "typescript": (  # scale's overload signature is dropped: the file defines scale
        [("interface", "Point", 6, 9), ("method", "Point.dist", 8, 8), ("type", "Id", 11, 11),
         ("enum", "Color", 13, 13), ("class", "Vec", 15, 25), ("method", "Vec.constructor", 17, 17),
         ("method", "Vec.dist", 19, 22), ("method", "Vec.zero", 24, 24), ("function", "addVec", 27, 27),
         ("module", "Geo", 29, 31), ("function", "Geo.area", 30, 30), ("class", "Shape", 33, 35),
         ("method", "Shape.area", 34, 34), ("function", "scale", 38, 38)],
        [("fs/promises", ("readFile",), 1), ("path", ("*",), 2), ("./foo", ("Foo",), 3)]),
    "tsx": (
        [("interface", "Props", 3, 3), ("function", "Hello", 6, 6), ("function", "App", 8, 10)],
        [("react", ("React",), 1)]),
}

SIGNATURES = {
    ("python", "add"): "def add(a: int, b: int = 2) -> int",
    ("python", "Greeter"): "class Greeter(Base, metaclass=Meta)",
    ("python", "Greeter.greet"): "async def greet(self, *args, **kw)",
    ("javascript", "Shape"): "export class Shape extends Base",
    ("javascript", "double"): "const double = (x) =>",
    ("typescript", "Vec"): "export class Vec implements Point",
    ("typescript", "Id"): "type Id = string | number",
    ("go", "Point.Dist"): "func (p *Point) Dist(q Point) float64",
    ("go", "Point"): "type Point struct",
    ("rust", "Point.new"): "pub fn new(x: f64, y: f64) -> Self",
    ("java", "Circle.area"): "@Override public double area()",
    ("c", "rect_t"): "typedef struct rect {...} rect_t",
    ("c", "make_array"): "double *make_array(size_t n, const char *name)",
    ("cpp", "geo.twice"): "template <typename T> T twice(T v)",
    ("cpp", "geo.Circle.Circle"): "Circle::Circle(double r)",
    ("cpp", "geo.Shape.~Shape"): "virtual ~Shape() = default",
}


@functools.cache
def tiktoken_tokenizer():
    from adapters.text.tokenizers import TiktokenTokenizer

    return TiktokenTokenizer()


def pieces_of(language: str, text: str, target: int = 100_000) -> list[tuple[str, str, str]]:
    """(kind, name, first line) of each piece, before packing."""
    parsed = code_tree.parse(language, text)
    assert parsed is not None and not parsed[0].root_node.has_error
    reading = code_tree._Reading(language, code_tree.row_starts(text), TokenStarts(SIMPLE.token_starts(text)), target)
    pieces = code_tree.tree_pieces(reading, parsed[0].root_node.named_children, 0, len(text), "", "", -1)
    assert "".join(text[p.start:p.end] for p in pieces) == text
    return [(p.kind, p.name, text[p.start:p.end].split("\n")[0]) for p in pieces]


def check(language: str, text: str, spec: ChunkSpec, tokenizer=SIMPLE) -> list:
    """Valid, rebuilding, deterministic chunks with complete metadata whose lines are those of their content."""
    chunks = TreeChunker(language).chunk(text, spec, tokenizer)
    assert chunk_problem(text, chunks) is None
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert TreeChunker(language).chunk(text, spec, tokenizer) == chunks
    for chunk in chunks:
        metadata = chunk.metadata
        assert metadata["language"] == language and metadata["kind"] in PIECE_KINDS and metadata["qualified_name"]
        assert metadata["start_line"] == text.count("\n", 0, chunk.start_char) + 1
        assert metadata["end_line"] == text.count("\n", 0, chunk.end_char - 1) + 1
        json.dumps(metadata)
    return chunks


# ---- outline ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("language", list(OUTLINES))
def test_outline_symbols_and_imports(language: str) -> None:
    found = outline(language, SOURCES[language])
    assert found is not None and found.language == language and found.parsed
    symbols, imports = OUTLINES[language]
    assert [(s.kind, s.qualified_name, s.start_line, s.end_line) for s in found.symbols] == symbols
    assert [(i.module, i.names, i.line) for i in found.imports] == imports
    for symbol in found.symbols:
        assert symbol.kind in SYMBOL_KINDS and symbol.name == symbol.qualified_name.rsplit(".", 1)[-1]
        assert symbol.signature and len(symbol.signature) <= 200 and "\n" not in symbol.signature


def test_signatures_are_heads_up_to_the_body_whitespace_collapsed() -> None:
    for (language, name), expected in SIGNATURES.items():
        found = outline(language, SOURCES[language])
        assert found is not None
        assert {s.qualified_name: s.signature for s in found.symbols}[name] == expected, (language, name)
    long = "function f(" + ", ".join(f"argument{i}" for i in range(60)) + ") {\n  return 1;\n}\n"
    assert len(outline("javascript", long).symbols[0].signature) == 200  # type: ignore[union-attr]


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("javascript", "import d, * as ns from 'q';\nimport './side.css';\nexport { a, b as c } from './m';\n"
                   "export * from './n';\nconst { z } = require('zz');\n",
     [("q", ("d", "*"), 1), ("./side.css", (), 2), ("./m", ("a", "b"), 3), ("./n", ("*",), 4), ("zz", (), 5)]),
    ("typescript", 'import x = require("y");\nimport type { T } from "./t";\n', [("y", (), 1), ("./t", ("T",), 2)]),
    ("python", "from __future__ import annotations\nfrom ..pkg.mod import (b as bb, c)\n\ndef f():\n    import json\n",
     [("__future__", ("annotations",), 1), ("..pkg.mod", ("b", "c"), 2), ("json", (), 5)]),
    ("rust", "use a::{b::{c, d as e}, f, *};\nuse std::io;\nextern crate serde;\nuse crate::x::*;\n",
     [("a::b", ("c", "d"), 1), ("a", ("f", "*"), 1), ("std", ("io",), 2), ("serde", (), 3), ("crate::x", ("*",), 4)]),
    ("go", 'package x\n\nimport . "fmt"\nimport (\n\t_ "embed"\n\t"github.com/a/b/v2"\n)\n',
     [("fmt", (), 3), ("embed", (), 5), ("github.com/a/b/v2", (), 6)]),
    ("java", "import a.B;\nimport static a.B.*;\n", [("a", ("B",), 1), ("a.B", ("*",), 2)]),
    ("cpp", '#include <sys/types.h>\n#include "../x.hpp"\nusing namespace std;\n',
     [("sys/types.h", (), 1), ("../x.hpp", (), 2)]),
])
def test_imports(language: str, text: str, expected: list) -> None:
    found = outline(language, text)
    assert found is not None and found.parsed
    assert [(i.module, i.names, i.line) for i in found.imports] == expected


@pytest.mark.parametrize(("language", "text", "expected"), [
    ("javascript", "export default class extends Base {\n  run() {}\n}\n", ["default", "default.run"]),
    ("javascript", "const a = () => 1, b = function () {};\nconst C = class { m() {} };\n", ["a", "b", "C", "C.m"]),
    ("javascript", "describe('x', () => {\n  function hidden() {}\n});\nif (ok) {\n  function shown() {}\n}\n",
     ["shown"]),  # not inside function bodies; inside blocks
    ("typescript", 'declare module "lib" {\n  export function f(): void;\n}\ndeclare global {\n  interface W {}\n}\n',
     ["lib", "lib.f", "W"]),
    ("go", "package x\n\ntype (\n\tA struct{}\n\tB = int\n)\n\nfunc (r *Box[T]) Get() T { return r.v }\n",
     ["A", "B", "Box.Get"]),
    ("rust", "impl<'a, T: Clone> fmt::Display for &'a Wrapper<T> {\n    fn fmt(&self) {}\n}\n", ["Wrapper.fmt"]),
    ("c", "#ifndef GEO_H\n#define GEO_H\nint area(int w);\ntypedef int (*cb)(int);\n#endif\n", ["area", "cb"]),
    ("cpp", 'extern "C" {\nint f(void);\n}\nnamespace {\nint hidden() { return 1; }\n}\nnamespace a::b {\nstruct S {\n'
            '  S();\n  operator bool() const;\n};\n}\ntemplate <typename T> int Box<T>::size() { return 0; }\n',
     ["f", "hidden", "a.b", "a.b.S", "a.b.S.S", "a.b.S.operator bool", "Box.size"]),
])
def test_qualified_names_through_wrappers_and_scopes(language: str, text: str, expected: list[str]) -> None:
    found = outline(language, text)
    assert found is not None and found.parsed
    assert [s.qualified_name for s in found.symbols] == expected


def test_a_syntax_error_still_gives_what_was_read() -> None:
    found = outline("go", GO.replace("func Map[T any](xs []T", "func Map[T any](xs []T,, {"))
    assert found is not None and not found.parsed
    assert "Point.Dist" in [s.qualified_name for s in found.symbols]


def test_unknown_language_and_empty_text() -> None:
    assert outline("cobol", "IDENTIFICATION DIVISION.") is None
    assert outline("", "x") is None
    assert outline("go", "") == code_tree.Outline("go", (), (), True)


def test_non_ascii_names_lines_and_signatures() -> None:
    text = ("// Ünïcödé — 東京 😀\nconst s = 'ß😀';\n\n/* café */\nfunction café(δ) {\n  return '😀' + δ;\n}\n"
            "const 東京 = () => 'ñ';\n")
    found = outline("javascript", text)
    assert found is not None
    assert [(s.name, s.start_line, s.end_line, s.signature) for s in found.symbols] == [
        ("café", 5, 7, "function café(δ)"), ("東京", 8, 8, "const 東京 = () =>")]
    assert pieces_of("javascript", text) == [
        ("preamble", MODULE, "// Ünïcödé — 東京 😀"), ("function", "café", "/* café */"),
        ("function", "東京", "const 東京 = () => 'ñ';")]
    for target in (3, 8, 1000):
        check("javascript", text, ChunkSpec(target, 1, target))
    bom = "\\ufeff" + text
    assert outline("javascript", bom) == found
    assert [c.content for c in check("javascript", bom, ChunkSpec(1000, 0, 1000))] == [bom]


def test_windows_line_endings_give_the_same_outline_and_lines() -> None:
    crlf = GO.replace("\n", "\r\n")
    assert outline("go", crlf) == outline("go", GO)
    assert [p[:2] for p in pieces_of("go", crlf)] == [p[:2] for p in pieces_of("go", GO)]
    check("go", crlf, ChunkSpec(20, 2, 20))


# ---- chunks ------------------------------------------------------------------------------------------

PIECES = {
    "javascript": [
        ("preamble", MODULE, "// Copyright 2024 — façade"),
        ("preamble", MODULE, "import { join, resolve as res } from 'path';"),
        ("preamble", MODULE, "const util = require('util');"), ("class", "Shape", "/**"),
        ("function", "outer", "function outer(a, b) {"), ("function", "double", "const double = (x) => x * 2;"),
        ("function", "main", "export default function main() {}")],
    "go": [
        ("preamble", MODULE, "package geo"), ("preamble", MODULE, "import ("), ("preamble", MODULE, 'import "strings"'),
        ("struct", "Point", "// Point is a 2D point."), ("interface", "Shape", "// Shape is anything with an area."),
        ("type", "Celsius", "type Celsius float64"), ("method", "Point.Dist", "// Dist returns the distance."),
        ("method", "Point.String", "func (p Point) String() string {"),
        ("function", "Map", "func Map[T any](xs []T, f func(T) T) []T {")],
    "rust": [
        ("preamble", MODULE, "use std::collections::HashMap;"), ("preamble", MODULE, "use std::io::{self, Read as R};"),
        ("preamble", MODULE, "mod util;"), ("struct", "Point", "/// A point in 2D."),
        ("enum", "Shape", "enum Shape { Circle(f64), Square(f64) }"), ("trait", "Area", "/// Things with area."),
        ("impl", "Point", "impl Point {"), ("impl", "Point", "impl Area for Point {"),
        ("module", "geometry", "pub mod geometry {"), ("type", "Map", "type Map = HashMap<String, Point>;"),
        ("function", "main", "fn main() {")],
    "typescript": [
        ("preamble", MODULE, 'import { readFile } from "fs/promises";'),
        ("preamble", MODULE, 'import * as path from "path";'),
        ("preamble", MODULE, 'import type { Foo } from "./foo";'), ("interface", "Point", "/** A point. */"),
        ("type", "Id", "type Id = string | number;"), ("enum", "Color", "enum Color { Red, Green }"),
        ("class", "Vec", "@sealed"),
        ("function", "addVec", "export const addVec = (a: Vec, b: Vec): Vec => new Vec(a.x + b.x, a.y + b.y);"),
        ("module", "Geo", "namespace Geo {"), ("class", "Shape", "abstract class Shape {"),
        ("function", "scale", "export function scale(p: Vec, k: number): Vec;"),
        ("function", "scale", "export function scale(p: Vec, k: number): Vec { return p; }")],
    "java": [
        ("preamble", MODULE, "package geo;"), ("preamble", MODULE, "import java.util.List;"),
        ("preamble", MODULE, "import java.util.*;"), ("preamble", MODULE, "import static java.lang.Math.hypot;"),
        ("interface", "Shape", "/** A shape. */"), ("class", "Circle", "public class Circle implements Shape {"),
        ("class", "Pair", "record Pair<A, B>(A first, B second) {")],
    "c": [
        ("preamble", MODULE, "#include <stdio.h>"), ("preamble", MODULE, '#include "geo.h"'),
        ("preamble", MODULE, "#define SQUARE(x) ((x) * (x))"),
        ("function", "log_msg", "void log_msg(const char *fmt, ...);"),
        ("function", "add", "static int add(int a, int b);"), ("struct", "point", "/* A point. */"),
        ("type", "rect_t", "typedef struct rect {"), ("enum", "color", "enum color { RED, GREEN };"),
        ("function", "add", "/* Add two ints. */"),
        ("function", "make_array", "double *make_array(size_t n, const char *name)"),
        ("function", "main", r'int main(void) { printf("héllo\n"); return 0; }')],
    "cpp": [
        ("preamble", MODULE, "#include <vector>"), ("preamble", MODULE, '#include "shape.hpp"'),
        ("module", "geo", "namespace geo {"), ("function", "main", "int main() {")],
    "tsx": [
        ("preamble", MODULE, 'import React from "react";'), ("interface", "Props", "interface Props { name: string }"),
        ("function", "Hello", "// Says hello."), ("function", "App", "export function App(): JSX.Element {")],
}


@pytest.mark.parametrize("language", CHUNKED)
def test_pieces_start_at_top_level_nodes_with_the_comments_and_attributes_above(language: str) -> None:
    assert pieces_of(language, SOURCES[language]) == PIECES[language]


@pytest.mark.parametrize("language", CHUNKED)
@pytest.mark.parametrize("target", [4, 12, 40, 200, 100_000])
def test_chunks_tile_the_text_and_carry_names_and_lines(language: str, target: int) -> None:
    text = SOURCES[language]
    chunks = check(language, text, ChunkSpec(target, target // 4, target), tiktoken_tokenizer())
    found = outline(language, text)
    assert found is not None
    names = {s.qualified_name for s in found.symbols} | {"Point", MODULE}  # Point: the Rust impl blocks
    for chunk in chunks:
        assert set(chunk.metadata.get("qualified_names") or [chunk.metadata["qualified_name"]]) <= names
    top = [s for s in found.symbols if "." not in s.qualified_name or language == "go"]
    for symbol in top:  # the chunk a definition starts in covers its first line
        holder = [c for c in chunks if c.metadata["start_line"] <= symbol.start_line <= c.metadata["end_line"]]
        assert holder, symbol


def test_a_long_class_is_cut_at_its_methods_scoped_by_the_class() -> None:
    methods = "\n".join(f"  // Method {i}.\n  m{i}(x) {{\n    return x + {i};\n  }}\n" for i in range(12))
    text = (f"import a from 'a';\n\n/** Big. */\nexport class Big extends Base {{\n  field = 1;\n\n{methods}}}\n\n"
            "function after() {}\n")
    pieces = pieces_of("javascript", text, target=40)
    assert pieces[:3] == [("preamble", MODULE, "import a from 'a';"), ("class", "Big", "/** Big. */"),
                          ("class", "Big", "  field = 1;")]
    assert pieces[3:15] == [("method", f"Big.m{i}", f"  // Method {i}.") for i in range(12)]
    assert pieces[15:] == [("function", "after", "function after() {}")]
    chunks = check("javascript", text, ChunkSpec(40, 5, 40))
    scoped = [c for c in chunks if str(c.metadata["qualified_name"]).startswith("Big.")]
    assert scoped and all(n.startswith("Big.") for c in scoped for n in c.metadata.get("qualified_names", []))
    assert chunks[-1].metadata["qualified_name"] == "after"  # never packed with the class's members


@pytest.mark.parametrize(("language", "text", "target", "expected"), [
    ("java", JAVA, 30, [("class", "Circle"), ("class", "Circle"), ("method", "Circle.Circle"),
                        ("method", "Circle.area"), ("class", "Circle.Builder"), ("enum", "Circle.Kind"),
                        ("class", "Pair")]),
    ("rust", RUST, 10, [("trait", "Area"), ("method", "Area.area"), ("method", "Area.describe"), ("impl", "Point"),
                        ("method", "Point.new"), ("impl", "Point"), ("method", "Point.area"), ("module", "geometry"),
                        ("function", "geometry.origin"), ("type", "Map")]),
    ("cpp", CPP, 12, [("module", "geo"), ("module", "geo.detail"), ("function", "geo.detail.helper"),
                      ("class", "geo.Shape"), ("class", "geo.Shape"), ("method", "geo.Shape.~Shape"),
                      ("method", "geo.Shape.area"), ("class", "geo.Circle"), ("class", "geo.Circle"),
                      ("method", "geo.Circle.Circle"), ("method", "geo.Circle.area"),
                      ("method", "geo.Circle.perimeter"), ("class", "geo.Circle"), ("class", "geo.Circle"),
                      ("function", "geo.twice"),
                      ("method", "geo.Circle.Circle"), ("method", "geo.Circle.perimeter"), ("function", "main")]),
])
def test_scopes_of_each_language_are_cut_at_their_members(language: str, text: str, target: int,
                                                          expected: list[tuple[str, str]]) -> None:
    pieces = [(kind, name) for kind, name, _ in pieces_of(language, text, target)]
    position = pieces.index(expected[0])
    assert pieces[position:position + len(expected)] == expected


def test_a_header_guard_and_extern_c_are_cut_inside() -> None:
    body = "\n".join(f"/* f{i} */\nint f{i}(int x);" for i in range(10))
    text = f'#ifndef GEO_H\n#define GEO_H\n\nextern "C" {{\n{body}\n}}\n\n#endif\n'
    names = [(kind, name) for kind, name, _ in pieces_of("cpp", text, target=20)]
    assert names == [("preamble", MODULE)] * 3 + [("function", f"f{i}") for i in range(10)]
    check("cpp", text, ChunkSpec(20, 2, 20))


def test_a_syntax_error_falls_back_to_line_pieces() -> None:
    text = GO.replace("func Map[T any](xs []T", "func Map[T any](xs []T,, {")
    spec = ChunkSpec(30, 3, 30)
    chunks = check("go", text, spec)
    expected = assemble(text, line_pieces(text), "go", TokenStarts(SIMPLE.token_starts(text)), spec,
                        code_tree.row_starts(text))
    assert chunks == expected and {c.metadata["language"] for c in chunks} == {"go"}


def test_registered_chunkers_and_a_bad_spec() -> None:
    registered: list = []
    code_tree.memtrove_register_chunkers(registered.append)
    assert [(c.name, c.version) for c in registered] == [(f"code-{language}", "1") for language in CHUNKED]
    assert TreeChunker("go").chunk("", ChunkSpec(10, 1, 10), SIMPLE) == []
    with pytest.raises(ValidationError):
        TreeChunker("go").chunk("package x\n", ChunkSpec(10, 10, 10), SIMPLE)


@pytest.fixture
def no_go_grammar(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(code_tree.GRAMMARS, "go", ("tree_sitter_not_installed", "language"))
    code_tree.grammar.cache_clear()
    code_tree.parse.cache_clear()
    yield
    code_tree.grammar.cache_clear()
    code_tree.parse.cache_clear()


def test_a_missing_grammar_means_no_chunker_and_no_outline(no_go_grammar) -> None:
    assert not code_tree.available("go") and code_tree.available("rust")
    registered: list = []
    code_tree.memtrove_register_chunkers(registered.append)
    assert "code-go" not in [c.name for c in registered] and "code-rust" in [c.name for c in registered]
    assert outline("go", GO) is None
    check("go", GO, ChunkSpec(30, 3, 30))  # a chunker made anyway reads by lines


def test_grammars_load_on_first_use_only() -> None:
    script = ("import sys\nfrom plugins.chunkers import code_tree\nnames = []\n"
              "code_tree.memtrove_register_chunkers(lambda c: names.append(c.name))\n"
              "assert len(names) == 8, names\n"
              "assert not [m for m in sys.modules if m.startswith('tree_sitter')], 'loaded at registration'\n"
              "code_tree.outline('go', 'package x\\n')\n"
              "assert 'tree_sitter_go' in sys.modules and 'tree_sitter_rust' not in sys.modules\n"
              "assert code_tree.grammar('go') is code_tree.grammar('go')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_python_chunks_carry_their_lines(newline: str) -> None:
    text = PYTHON.replace("\n", newline)
    chunks = CodeChunker().chunk(text, ChunkSpec(25, 3, 25), SIMPLE)
    breaks = re.compile(r"\r\n?|\n")
    for chunk in chunks:
        if "part" not in chunk.metadata:
            assert chunk.metadata["start_line"] == len(breaks.findall(text, 0, chunk.start_char)) + 1
            content = re.sub(r"(?:\r\n?|\n)\Z", "", text[chunk.start_char:chunk.end_char])
            assert chunk.metadata["end_line"] == chunk.metadata["start_line"] + len(breaks.findall(content))
    assert chunks[-1].metadata["end_line"] == len(breaks.findall(text))


@pytest.mark.parametrize("language", CHUNKED)
def test_language_of_names_each_sample(language: str) -> None:
    suffix = {"javascript": "js", "typescript": "ts", "tsx": "tsx", "go": "go", "rust": "rs", "java": "java",
              "c": "c", "cpp": "cpp"}[language]
    assert language_of(f"src/x.{suffix}") == language


class TestTreeChunkers(ChunkerContract):
    @pytest.fixture(params=CHUNKED)
    def chunker(self, request):
        return TreeChunker(request.param)

    @pytest.fixture
    def samples(self):
        return [SOURCES[language] for language in CHUNKED]
