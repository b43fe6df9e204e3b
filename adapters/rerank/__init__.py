"""Rerankers: the learned stage shipped in the package and opt-in rerank APIs (issue 43, items 3 and 4)."""
