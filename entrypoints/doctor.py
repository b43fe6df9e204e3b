"""``memtrove doctor``: does the vector index hold what the store holds (``--rebuild-vectors`` makes it so);
which tokens the upgrade to least privilege narrowed to no project."""

from __future__ import annotations

import contextlib
import time

from config.settings import Settings
from domain.access.tokens import narrowed
from domain.ports.identity import TokenStore
from domain.upkeep.vector_sync import COLLECTIONS
from entrypoints.runtime import Runtime
from entrypoints.shared import data_dir_of, holding, uses_data_dir


def run_doctor(settings: Settings, rebuild: bool) -> int:
    """0 when store and index agree (after a rebuild, if asked), 1 when they do not."""
    held = contextlib.ExitStack()
    if uses_data_dir(settings):  # embedded stores: the running server (if any) must not write meanwhile
        held.enter_context(holding(data_dir_of(settings), {"kind": "doctor"}))
    with held:
        runtime = Runtime(settings)
        runtime.start()
        runtime.check_store()
        try:
            uc = runtime.app.use_cases
            adopted = uc.adopt_vectors()()
            if adopted:
                print(f"took {adopted} vectors over from the index into the store")
            if rebuild:
                started = time.perf_counter()
                counts = uc.rebuild_vectors()()
                print(f"rebuilt the vector index from the store in {time.perf_counter() - started:.1f} s: "
                      + ", ".join(f"{c} {n}" for c, n in counts.items()))
            uc.sync_vectors().catch_up()
            return report(runtime)
        finally:
            runtime.shutdown()


def report(runtime: Runtime) -> int:
    store, index = runtime.app.adapters.store(), runtime.app.adapters.vectors()
    switch = runtime.switch
    if switch is not None:  # a store built with the other local model: served with it until re-embedded
        status = switch.status(switch.progress(store))
        print(f"model switch: {status['from']} -> {status['to']}: {status['done']} of {status['total']} records "
              f"re-embedded; a running server finishes it and switches (searches use the first meanwhile)")
    healthy = True
    for collection in COLLECTIONS:
        stored, indexed = store.count_vectors(collection), index.count(collection)
        mark = "ok" if stored == indexed else "DIFFERS"
        healthy &= stored == indexed
        print(f"{collection:16} store {stored:>9}  index {indexed:>9}  {mark}")
    jobs = store.open_jobs()
    print(f"open ingest jobs: {len(jobs)}; queued index work: {'none' if store.oldest_queued() is None else 'some'}")
    if not healthy:
        print("the index differs from the store: run `memtrove doctor --rebuild-vectors`")
    warn_narrowed(store)
    return 0 if healthy else 1


def warn_narrowed(store: TokenStore) -> None:
    """A warning per live token that reached every project only for being made without --project, and
    reaches none since the upgrade (a warning: the store is healthy, a client may have lost access)."""
    for info in narrowed(store.list_tokens()):
        label = f", {info.label!r}" if info.label else ""
        print(f"warning: token {info.token_id} (user {info.principal.user_id}{label}) was made without --project "
              f"and reached every project; since {info.narrowed_at} it reaches none (least privilege). Grant "
              f"what it needs: `memtrove token grant {info.token_id} --project NAME` (or --project '*')")
