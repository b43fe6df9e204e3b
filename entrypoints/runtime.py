"""The running service: the container, started resources, and the once-only store repair."""

from __future__ import annotations

import threading
import time

from loguru import logger

from config.container import Application
from config.settings import Settings


WARM_UP_DELAY = 1.0


class Runtime:
    """Holds the container for an entrypoint; stores are repaired before the first tool touches them."""

    def __init__(self, settings: Settings, app: Application | None = None) -> None:
        self.settings = settings
        self.app = app or Application(settings=settings)
        self._ready = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Fast checks that must fail the start: the data dir, the chunk sizes, the stored profile."""
        self.settings.memtrove_data_dir.mkdir(parents=True, exist_ok=True)
        self.app.use_cases.chunk_spec()
        profile = self.app.use_cases.check_profile()()
        logger.info("store_opened profile={}/{}/{} data_dir={}", profile.provider, profile.model,
                    profile.dimensions, self.settings.memtrove_data_dir)

    def ensure_ready(self) -> None:
        """Open the vector index and sweep what an interrupted write left behind; once."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            started = time.perf_counter()
            report = self.app.use_cases.repair()()
            logger.info("stores_repaired orphan_vectors={} stale_vectors={} latency_ms={:.0f}",
                        report.orphan_vectors_removed, report.stale_vectors_removed,
                        (time.perf_counter() - started) * 1000)
            self._ready = True

    def warm_up(self, delay: float = WARM_UP_DELAY) -> None:
        """Background: repair the stores and load the model so the first call is quick."""
        def run() -> None:
            # Importing Chroma and loading the model hold the GIL for ~2 s; starting at once would
            # slow the client's initialize and tools/list, which arrive right after the spawn.
            time.sleep(delay)
            try:
                self.ensure_ready()
                self.app.adapters.embedder().embed_query("warm up")
                logger.info("warm_up_done")
            except Exception as exc:  # the first real call will report it properly
                logger.warning("warm_up_failed error={}", exc)

        threading.Thread(target=run, name="memtrove-warmup", daemon=True).start()

    def shutdown(self) -> None:
        self.app.shutdown_resources()
