"""Adapters: the real technologies behind the domain's ports."""
