"""The hooks a memtrove plugin implements; third parties ship them under the ``memtrove`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable

import pluggy

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
