"""Register tools whose arguments reach our validation as sent, under the schema their types describe.

The SDK validates arguments with pydantic before a tool runs: a missing argument or a wrong type
would come back as a pydantic dump, with no structured error and no log line, and lax parsing
would turn ``true`` into ``1``. So each tool is registered twice over: its typed signature gives
the published JSON schema, and a twin that accepts any value (missing ones as ``None``) is what
runs, so the domain's checks decide with the spec's messages.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field


# The search knobs shared by memory_search, artifact_search and hybrid_search.
Mode = Annotated[str, Field(
    description="hybrid: words and meaning fused (default); vector: meaning only; lexical: words only",
    json_schema_extra={"enum": ["hybrid", "vector", "lexical"]})]
Profile = Annotated[str | None, Field(
    description="Fusion weights: default, technical, conversational or code (server default when omitted)")]


def lax_tool(fn: Callable[..., Any], description: str, annotations: ToolAnnotations | None = None) -> Tool:
    """A tool that publishes ``fn``'s typed schema but hands every argument to ``fn`` unparsed."""
    typed = Tool.from_function(fn, description=description, annotations=annotations)

    @functools.wraps(fn)
    def accepting_anything(**kwargs: Any) -> Any:
        return fn(**kwargs)

    params = [
        p.replace(annotation=Annotated[Any, Field(description=_describe(p))],
                  default=None if p.default is inspect.Parameter.empty else p.default)
        for p in inspect.signature(fn).parameters.values()
    ]
    # Tools return CallToolResult themselves (structured content and text, or an error).
    accepting_anything.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    del accepting_anything.__wrapped__  # the SDK must read the lax signature, not the typed one
    lax = Tool.from_function(accepting_anything, name=typed.name, description=description, annotations=annotations)
    return lax.model_copy(update={"parameters": typed.parameters})


def _describe(param: inspect.Parameter) -> str:
    for meta in getattr(param.annotation, "__metadata__", ()):
        if getattr(meta, "description", None):
            return str(meta.description)
    return param.name
