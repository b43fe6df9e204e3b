"""Spec 004 project documents: items with versions, canonical documents, idempotent commits, restore bundles."""
