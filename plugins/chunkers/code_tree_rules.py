"""What a tree-sitter node defines, language by language: its kind, name, scope body and signature.

``definitions(language, node, scope_kind)`` reads one child of a container (a file, a class body...)
through its wrappers (``export``, decorators, ``template <...>``, ``declare``) and gives what it defines.
Kinds are those of ``domain.code.model.SYMBOL_KINDS``, plus "impl" for a Rust ``impl`` block (a scope
named after its type, not a symbol). Names are dotted: ``Class.method``, ``Recv.Method`` (Go), ``Type.method``
(Rust impl), ``ns.Class.method`` (C++ namespaces and ``A::f`` definitions, "::" written ".").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from tree_sitter import Node

CLASS_LIKE = frozenset({"class", "interface", "struct", "trait", "impl", "enum"})  # a function in one is a method
FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
SIGNATURE_CHARS = 200
_SCRIPT_TYPES = {"class_declaration": "class", "abstract_class_declaration": "class", "class": "class",
                 "interface_declaration": "interface", "enum_declaration": "enum", "type_alias_declaration": "type",
                 "internal_module": "module", "module": "module", "function_declaration": "function",
                 "generator_function_declaration": "function", "function_signature": "function",
                 "method_definition": "method", "method_signature": "method", "abstract_method_signature": "method"}
_SCRIPT_SCOPES = {"class", "interface", "module"}
_SCRIPT_WRAPPERS = {"export_statement", "ambient_declaration", "expression_statement"}
_JAVA_TYPES = {"class_declaration": "class", "record_declaration": "class", "interface_declaration": "interface",
               "annotation_type_declaration": "interface", "enum_declaration": "enum", "method_declaration": "method",
               "constructor_declaration": "method", "compact_constructor_declaration": "method"}
_RUST_TYPES = {"struct_item": "struct", "union_item": "struct", "enum_item": "enum", "trait_item": "trait",
               "type_item": "type", "mod_item": "module", "impl_item": "impl"}
_C_TYPES = {"struct_specifier": "struct", "union_specifier": "struct", "enum_specifier": "enum",
            "class_specifier": "class"}
_C_NAMES = {"identifier", "field_identifier", "type_identifier", "qualified_identifier", "destructor_name",
            "operator_name", "template_function", "template_method", "primitive_type"}
_GENERICS = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
_SPACES = re.compile(r"\s+")
_REFERENCE = re.compile(r"^[&*\s]*(?:'\w+\s+)?(?:mut\s+|dyn\s+|const\s+)*")
_OPENING_SPACE = re.compile(r"([(\[]) ")
_CLOSING_SPACE = re.compile(r",? ([)\]])")


class Found(NamedTuple):
    """One definition: ``outer`` holds it with its wrappers; ``body`` holds its members when it is a scope;
    ``declared``: a declaration only (prototype, overload), dropped when the file also defines it."""

    kind: str
    name: str
    node: Node
    outer: Node
    body: Node | None = None
    declared: bool = False


def text_of(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def end_row(node: Node) -> int:
    """The 0-based last row; a node that takes its line break (a ``//`` comment) ends on the row before."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point.row else row


def bare(name: str) -> str:
    """``geo::Vec<T>`` -> ``geo.Vec``; ``&'a mut Point`` -> ``Point``; ``*Point[T]`` -> ``Point``."""
    if name.isidentifier():
        return name
    while (shorter := _GENERICS.sub("", name)) != name:
        name = shorter
    name = _REFERENCE.sub("", name.strip())
    return ".".join(part.strip() for part in name.split("::") if part.strip())


def _python(node: Node, scope_kind: str) -> list[Found]:
    outer = node
    if node.type == "decorated_definition":
        node = node.child_by_field_name("definition") or node
    name = text_of(node.child_by_field_name("name"))
    if node.type == "class_definition" and name:
        return [Found("class", name, node, outer, node.child_by_field_name("body"))]
    if node.type == "function_definition" and name:
        return [Found("method" if scope_kind in CLASS_LIKE else "function", name, node, outer)]
    return []


def _script(node: Node, scope_kind: str) -> list[Found]:
    outer = node
    while node.type in _SCRIPT_WRAPPERS:
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        if inner is None:
            inner = next((c for c in node.named_children if c.type not in ("comment", "decorator")), None)
        if inner is None or (node.type == "expression_statement" and inner.type != "internal_module"):
            return []
        node = inner
    kind = _SCRIPT_TYPES.get(node.type)
    name = text_of(node.child_by_field_name("name")).strip("'\"`")
    if kind is not None:
        if kind == "function" and scope_kind in CLASS_LIKE:
            kind = "method"
        declared = node.type in ("function_signature", "method_signature")
        return [Found(kind, name or "default", node, outer,
                      node.child_by_field_name("body") if kind in _SCRIPT_SCOPES else None, declared)]
    if node.type in ("field_definition", "public_field_definition"):
        value = node.child_by_field_name("value")
        name = text_of(node.child_by_field_name("property") or node.child_by_field_name("name"))
        return [Found("method", name, node, outer)] if value is not None and value.type in FUNCTION_VALUES else []
    if node.type in FUNCTION_VALUES and outer.type == "export_statement":  # export default () => ...
        return [Found("function", text_of(node.child_by_field_name("name")) or "default", node, outer)]
    found: list[Found] = []
    if node.type in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            name_node = declarator.child_by_field_name("name")
            if value is None or name_node is None or name_node.type != "identifier":
                continue
            wrapper = outer if not found else declarator  # the statement's lines and signature are the first's
            if value.type in FUNCTION_VALUES:
                found.append(Found("method" if scope_kind in CLASS_LIKE else "function", text_of(name_node),
                                   declarator, wrapper))
            elif value.type == "class":
                found.append(Found("class", text_of(name_node), declarator, wrapper, value.child_by_field_name("body")))
    return found


def _go(node: Node, scope_kind: str) -> list[Found]:
    name = text_of(node.child_by_field_name("name"))
    if node.type == "function_declaration":
        return [Found("function", name, node, node)]
    if node.type == "method_declaration":
        receiver = node.child_by_field_name("receiver")
        declared = next((c for c in receiver.named_children if c.type == "parameter_declaration"), None) \
            if receiver is not None else None
        owner = bare(text_of(declared.child_by_field_name("type"))) if declared is not None else ""
        return [Found("method", f"{owner}.{name}" if owner else name, node, node)]
    if node.type == "method_elem":
        return [Found("method", name, node, node)]
    if node.type != "type_declaration":
        return []
    specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
    found = []
    for spec in specs:
        shape = spec.child_by_field_name("type")
        kind = {"struct_type": "struct", "interface_type": "interface"}.get(shape.type if shape else "", "type")
        found.append(Found(kind, text_of(spec.child_by_field_name("name")), spec, node if len(specs) == 1 else spec,
                           shape if kind == "interface" else None))
    return found


def _rust(node: Node, scope_kind: str) -> list[Found]:
    if node.type in ("function_item", "function_signature_item"):
        kind = "method" if scope_kind in CLASS_LIKE else "function"
        return [Found(kind, text_of(node.child_by_field_name("name")), node, node,
                      declared=node.type == "function_signature_item")]
    kind = _RUST_TYPES.get(node.type)
    body = node.child_by_field_name("body")
    if kind is None or (kind == "module" and body is None):
        return []
    if kind == "impl":
        name = bare(text_of(node.child_by_field_name("type"))).rsplit(".", 1)[-1]
    else:
        name = text_of(node.child_by_field_name("name"))
    return [Found(kind, name, node, node, body if kind in ("impl", "trait", "module") else None)]


def _java(node: Node, scope_kind: str) -> list[Found]:
    kind = _JAVA_TYPES.get(node.type)
    if kind is None:
        return []
    body = node.child_by_field_name("body") if kind != "method" else None
    return [Found(kind, text_of(node.child_by_field_name("name")), node, node, body)]


def c_name(declarator: Node | None) -> tuple[str, bool]:
    """The name a C/C++ declarator declares, and whether it is a function (not a pointer to one)."""
    function = pointer = False
    while declarator is not None:
        if declarator.type == "function_declarator":
            function = True
        elif function and declarator.type in ("pointer_declarator", "parenthesized_declarator"):
            pointer = True  # int (*handler)(int): a pointer to a function, not one
        if declarator.type in _C_NAMES:
            return text_of(declarator), function and not pointer
        if declarator.type == "operator_cast":
            return text_of(declarator).split("(", 1)[0].strip(), not pointer
        following = declarator.child_by_field_name("declarator")
        if following is None:
            following = next((c for c in declarator.named_children if "declarator" in c.type
                              or c.type in _C_NAMES), None)
        declarator = following
    return "", False


def _c(node: Node, scope_kind: str, cpp: bool = False) -> list[Found]:
    outer = node
    if node.type == "template_declaration":
        node = next((c for c in node.named_children if c.type != "template_parameter_list"), node)
        if node is outer:
            return []
    in_class = scope_kind in CLASS_LIKE
    if node.type == "function_definition":
        name, _ = c_name(node.child_by_field_name("declarator"))
        qualified = "::" in name
        return [Found("method" if in_class or qualified else "function", bare(name), node, outer)] if name else []
    if node.type in ("declaration", "field_declaration"):
        found = []
        for declarator in node.children_by_field_name("declarator"):
            name, function = c_name(declarator)
            if name and function:
                found.append(Found("method" if in_class or "::" in name else "function", bare(name), node,
                                   outer if not found else declarator, declared=True))
        return found
    if node.type == "type_definition":
        name, _ = c_name(node.child_by_field_name("declarator"))
        found = [Found("type", name, node, outer)] if name else []
        tagged = node.child_by_field_name("type")
        return found + (_c(tagged, scope_kind, cpp) if tagged is not None else [])
    if node.type == "alias_declaration":
        return [Found("type", text_of(node.child_by_field_name("name")), node, outer)]
    if node.type == "namespace_definition":
        name = bare(text_of(node.child_by_field_name("name")))
        return [Found("module", name, node, outer, node.child_by_field_name("body"))] if name else []
    kind = _C_TYPES.get(node.type)
    body = node.child_by_field_name("body")
    name = text_of(node.child_by_field_name("name"))
    if kind is None or body is None or not name:
        return []
    return [Found(kind, bare(name), node, outer, body if cpp and kind in ("class", "struct") else None)]


def _cpp(node: Node, scope_kind: str) -> list[Found]:
    return _c(node, scope_kind, cpp=True)


RULES = {"python": _python, "javascript": _script, "typescript": _script, "tsx": _script, "go": _go,
         "rust": _rust, "java": _java, "c": _c, "cpp": _cpp}


def definitions(language: str, node: Node, scope_kind: str = "") -> list[Found]:
    """What ``node`` (a child of a file or of a scope of kind ``scope_kind``) defines; [] for a statement."""
    return RULES[language](node, scope_kind)


def members(body: Node) -> list[Node]:
    """The children of a scope's body, with Java's ``enum`` declarations after the constants."""
    found: list[Node] = []
    for child in body.named_children:
        if child.type == "enum_body_declarations":
            found += child.named_children
        else:
            found.append(child)
    return found


def signature(source: bytes, found: Found, language: str) -> str:
    """The definition's head, up to its body, whitespace collapsed, at most SIGNATURE_CHARS characters."""
    node, start_node = found.node, found.node if language == "python" else found.outer
    start = start_node.start_byte
    for child in start_node.children:  # TypeScript's decorators are not part of the head
        if child.type != "decorator":
            start = child.start_byte
            break
    end = node.end_byte
    body = node.child_by_field_name("body")
    if node.type == "variable_declarator":
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
    initializers = next((c for c in node.children if c.type == "field_initializer_list"), None)
    body = initializers or body
    if body is not None and body.start_byte > start:
        end = body.start_byte
    head = source[start:min(end, start + 8 * SIGNATURE_CHARS)].decode("utf-8", "replace")
    if (body is None and "{" in head and node.type != "type_alias_declaration") or node.type == "type_definition":
        head = head.split("{", 1)[0]
    if node.type == "type_definition" and (alias := node.child_by_field_name("declarator")) is not None:
        head = f"{head.rstrip()} {{...}} {text_of(alias)}" if "{" in text_of(node) else head
    head = _SPACES.sub(" ", head).strip()
    head = _OPENING_SPACE.sub(r"\1", _CLOSING_SPACE.sub(r"\1", head))
    if not head.endswith("=>"):
        head = head.rstrip(":;{ ")
    return head[:SIGNATURE_CHARS]
