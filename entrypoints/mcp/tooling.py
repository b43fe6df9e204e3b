"""Register tools whose arguments reach our validation as sent, under the schema their types describe.

The SDK validates arguments with pydantic before a tool runs: a missing argument or a wrong type
would come back as a pydantic dump, with no structured error and no log line, and lax parsing
would turn ``true`` into ``1``. So each tool is registered twice over: its typed signature gives
the published JSON schema, and a twin that accepts any value (missing ones as ``None``) is what
runs, so the domain's checks decide with the spec's messages. Arguments the tool does not declare
are refused by name (pydantic would drop them silently: ``limt=3`` would search with the default).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import time
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

from loguru import logger
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from domain.errors import MemtroveError, ValidationError
from domain.model import RETENTION_POLICIES, SENSITIVITIES, VISIBILITY_SCOPES
from entrypoints.mcp import render


# The search knobs shared by memory_search, artifact_search and hybrid_search.
Mode = Annotated[str, Field(
    description="hybrid: words and meaning fused (default); vector: meaning only; lexical: words only",
    json_schema_extra={"enum": ["hybrid", "vector", "lexical"]})]
Profile = Annotated[str | None, Field(
    description="Fusion weights: default, technical, conversational or code (server default when omitted)")]
AsOf = Annotated[str | None, Field(description="ISO-8601: memories as of then (default: now)")]
PerArtifact = Annotated[int | None, Field(
    description="Results one document may take, 1-10: several passages of one document (server default "
                "when omitted, MEMTROVE_PER_ARTIFACT)")]

# Who may see an item a tool writes (spec 000's privacy fields, their defaults as there).
Sensitivity = Annotated[str, Field(description="normal, sensitive or highly_sensitive",
                                   json_schema_extra={"enum": list(SENSITIVITIES)})]
Visibility = Annotated[str, Field(description="me, team, org or custom (visible_to)",
                                  json_schema_extra={"enum": list(VISIBILITY_SCOPES)})]
Retention = Annotated[str, Field(description="forever, 1y, until_resolved or custom (retention_days)",
                                 json_schema_extra={"enum": list(RETENTION_POLICIES)})]
VisibleTo = Annotated[list[str] | None, Field(
    description="custom visibility: user ids and team:<name> entries, at most 50")]
RetentionDays = Annotated[int | None, Field(description="custom retention: days after its time, 1-36500")]


def lax_tool(fn: Callable[..., Any], description: str, annotations: ToolAnnotations | None = None,
             failure: Callable[[MemtroveError], CallToolResult] = render.error) -> Tool:
    """A tool that publishes ``fn``'s typed schema but hands every argument to ``fn`` unparsed;
    ``failure`` renders a refusal (an undeclared argument) in the toolset's error shape."""
    typed = Tool.from_function(fn, description=description, annotations=annotations)

    @functools.wraps(fn)
    def accepting_anything(**kwargs: Any) -> Any:
        return fn(**kwargs)

    params = [
        # The SDK's Context (progress notifications) is injected, never an argument: its type, resolved.
        p.replace(annotation=typing.get_type_hints(fn)[p.name]) if p.name == typed.context_kwarg else
        p.replace(annotation=Annotated[Any, Field(description=_describe(p))],
                  default=None if p.default is inspect.Parameter.empty else p.default)
        for p in inspect.signature(fn).parameters.values()
    ]
    # Tools return CallToolResult themselves (structured content and text, or an error).
    accepting_anything.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    del accepting_anything.__wrapped__  # the SDK must read the lax signature, not the typed one
    lax = DeclaredArgumentsTool.from_function(accepting_anything, name=typed.name, description=description,
                                              annotations=annotations, context_kwarg=typed.context_kwarg)
    as_sent = ArgumentsAsSent(arg_model=lax.fn_metadata.arg_model, output_schema=lax.fn_metadata.output_schema,
                              output_model=lax.fn_metadata.output_model, wrap_output=lax.fn_metadata.wrap_output,
                              strings=frozenset(name for name, declared in typed.fn_metadata.arg_model.model_fields.items()
                                                if _admits_str(declared.annotation)))
    return lax.model_copy(update={"parameters": compact_schema(typed.parameters), "failure": failure,
                                  "fn_metadata": as_sent})


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The published input schema without what pydantic adds that tells a model nothing: titles made
    from the parameter names ("Conversation Id"), and ``anyOf [X, null]`` with ``default: null`` for an
    optional parameter (it is optional by not being required; null is still accepted when sent). Every
    tool's schema is read by the client's model on each request, so this is paid for in its context."""
    return {key: ({name: _compact_property(prop) for name, prop in value.items()} if key == "properties" else
                  value) for key, value in schema.items() if key != "title"}


def _compact_property(prop: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in prop.items() if k != "title" and not (k == "default" and v is None)}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options and "default" not in out:
        (kept,) = [o for o in options if o != {"type": "null"}]
        out = {**{k: v for k, v in out.items() if k != "anyOf"}, **kept}
    if isinstance(out.get("items"), dict):
        out["items"] = _compact_property(out["items"])
    return out


class ArgumentsAsSent(FuncMetadata):
    """Argument handling that leaves a string where the tool's schema admits one.

    The SDK reads every string sent for a parameter not typed ``str`` as JSON when it parses (some
    clients send a list as '["a"]'). Our twin's parameters are all ``Any``, so a memory whose content
    is '{"k": "v"}' reached the tool as a dict and was refused. Only parameters whose declared type
    admits no string (a list, an object) keep that courtesy; every other value arrives as sent.
    """

    strings: frozenset[str] = frozenset()

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        as_sent = {name: value for name, value in data.items() if name in self.strings}
        parsed = super().pre_parse_json({k: v for k, v in data.items() if k not in as_sent})
        # The text "null" is not a missing argument: a list or object parameter refuses it as sent.
        return {**{k: data[k] if v is None and isinstance(data[k], str) else v for k, v in parsed.items()}, **as_sent}


def _admits_str(annotation: Any) -> bool:
    """Whether a declared type accepts a string (``str``, ``str | None``, ``Any``, a Literal of strings)."""
    if annotation is str or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _admits_str(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return any(isinstance(choice, str) for choice in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return any(_admits_str(member) for member in typing.get_args(annotation))
    return False


class DeclaredArgumentsTool(Tool):
    """A tool that refuses arguments it does not declare, before anything runs."""

    failure: Callable[[MemtroveError], CallToolResult] = render.error

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        allowed = list(self.fn_metadata.arg_model.model_fields)
        unknown = sorted(set(arguments) - set(allowed))
        if not unknown:
            return await super().run(arguments, context, convert_result=convert_result)
        started = time.perf_counter()
        refusal = self.failure(unknown_arguments(unknown, allowed))
        # The same line run_tool writes for every other call: one log line per call, whatever refused it.
        logger.info("tool_call tool={} status={} latency_ms={:.1f}", self.name, ValidationError.kind,
                    (time.perf_counter() - started) * 1000)
        return refusal


def unknown_arguments(unknown: list[str], allowed: list[str]) -> ValidationError:
    """Names the unknown arguments (with the closest allowed one, if any) and every allowed one."""
    noun = "argument" if len(unknown) == 1 else "arguments"
    hints = [f" (did you mean {close[0]}?)" if (close := difflib.get_close_matches(name, allowed, n=1)) else ""
             for name in unknown]
    named = ", ".join(f"{name}{hint}" for name, hint in zip(unknown, hints))
    return ValidationError(unknown[0], f"Unknown {noun}: {named}. Allowed: {', '.join(allowed) or '(none)'}")


def _describe(param: inspect.Parameter) -> str:
    for meta in getattr(param.annotation, "__metadata__", ()):
        if getattr(meta, "description", None):
            return str(meta.description)
    return param.name
