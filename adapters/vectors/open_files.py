"""Room in embedded Chroma's index cache: its size comes from the open-files limit, so that is raised first.

chromadb 1.5.9 gives its process one cache of HNSW indexes, ``RLIMIT_NOFILE // 5`` of them (4 files and a
pickle each: chromadb/api/rust.py), split into 64 shards by index id (rust/cache/src/foyer.rs), and an
index that leaves it is closed, not written (rust/segment/src/local_segment_manager.rs). A collection
that has not reached ``hnsw:sync_threshold`` (1,000) vectors exists only there and in Chroma's log,
which Chroma replays once per process; once evicted, its next search fails with "Nothing found on
disk", and an evicted larger one is read back as it was at its last flush. At the common soft limit of
1,024 a shard holds 3 indexes; at 256, one. The soft limit is raised towards the hard one before the
first client opens, the cache is sized for good, and the process may then hold that many files.
"""

from __future__ import annotations

import functools

from loguru import logger

CAP = 65_536  # 13,107 indexes, 204 a shard; no higher, so the children a server starts inherit a sane limit
_SHARDS, _FILES_PER_INDEX = 64, 5  # chromadb 1.5.9: 64 shards of the cache; RLIMIT_NOFILE // 5 indexes
ROOMY = 8  # indexes a shard should hold: a server's dozen collections then never push one out


def per_shard(soft: int) -> int:
    """How many HNSW indexes each of Chroma's cache shards keeps under this soft limit (at least one)."""
    return max(1, soft // _FILES_PER_INDEX // _SHARDS)


@functools.cache
def raise_open_files_limit(cap: int = CAP) -> int | None:
    """Raise the soft open-files limit to the hard one (at most ``cap``), never lower it; the soft limit
    after, or None where there is none (Windows). Once a process: Chroma reads it when it starts."""
    try:
        import resource
    except ImportError:  # Windows: Chroma sizes its cache from _getmaxstdio() instead
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    while soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            break
        except (ValueError, OSError):  # macOS refuses past kern.maxfilesperproc: try half
            target //= 2
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and per_shard(soft) < ROOMY:
        logger.warning(
            "The open-files limit is {} and cannot be raised (hard limit {}): embedded Chroma keeps only {} "
            "HNSW index(es) in each of its {} cache shards, and a collection pushed out of it is rebuilt from "
            "the store's copy at its next search. Raise it (`ulimit -n 4096` or more) before starting memtrove",
            soft, "unlimited" if hard == resource.RLIM_INFINITY else hard, per_shard(soft), _SHARDS)
    return soft
