"""The hooks a memtrove plugin implements; third parties ship them under the ``memtrove`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from domain.graph.extraction import Extractor
from domain.ports import Chunker, PrivacyPolicy

PROJECT = "memtrove"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    """Register Chunker instances.

    :param register: callable taking one Chunker (``name``, ``version``, ``chunk(text, spec, tokenizer)``).
    """


@hookspec
def memtrove_register_privacy_policies(register: Callable[[PrivacyPolicy], None]) -> None:
    """Register PrivacyPolicy instances; every read path passes its hits through all of them.

    :param register: callable taking one PrivacyPolicy (``name``, ``filter_hits(hits, context)``).
    """


@hookspec
def memtrove_register_extractors(register: Callable[[Extractor], None], options: Mapping[str, Any]) -> None:
    """Register Extractor instances (build_graph reads records with the one MEMTROVE_EXTRACTOR names).

    :param register: callable taking one Extractor (``name``, ``version``, ``extract(passages)``).
    :param options: the extractor settings (``model``, ``base_url``, ``api_key``, ``timeout``; empty when unset).
    """
