"""``memtrove-bench``: retrieval benchmarks run against a fresh ``memtrove serve`` over MCP stdio.

Three protocols, each with the same baselines measured in the same run on the same stored data
(BM25 alone, vectors alone, plain RRF): ``turns`` (LoCoMo conversation turns through
history_append and hybrid_search), ``facts`` (LoCoMo's per-session observations through
memory_store and memory_search) and ``passages`` (paraphrased questions over Python's library
documentation through artifact_ingest and hybrid_search).
"""
