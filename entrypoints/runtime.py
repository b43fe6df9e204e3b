"""The running service: the container, the store checks, and the once-only store repair."""

from __future__ import annotations

import os
import sys
import threading
import time

from loguru import logger

from config.container import Application
from config.settings import Settings
from domain.errors import ConfigurationError

WARM_UP_DELAY = 1.0


class Runtime:
    """Holds the container for an entrypoint; stores are checked and repaired before a tool touches them."""

    def __init__(self, settings: Settings, app: Application | None = None) -> None:
        self.settings = settings
        self.app = app or Application(settings=settings)
        self._checked = False
        self._ready = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Checks that need no store: the data dir exists, the chunk sizes suit the model."""
        self.settings.memtrove_data_dir.mkdir(parents=True, exist_ok=True)
        self.app.use_cases.chunk_spec()
        chosen = self.settings.memtrove_chunker
        if chosen != "auto":  # plugins load on first use otherwise: a fast start
            available = self.app.plugins.registry().names()
            if chosen not in available:
                raise ConfigurationError(f"Invalid setting MEMTROVE_CHUNKER={chosen!r}: must be auto or one of: "
                                         f"{', '.join(available)}")

    def check_store(self) -> None:
        """The store's embedding profile matches the configured embedder (recorded on first use)."""
        with self._lock:
            if self._checked:
                return
            profile = self.app.use_cases.check_profile()()
            logger.info("store_opened profile={}/{}/{} data_dir={}", profile.provider, profile.model,
                        profile.dimensions, self.settings.memtrove_data_dir)
            self._checked = True

    def ensure_ready(self) -> None:
        """Check the store, open the vector index and sweep what an interrupted write left behind; once."""
        if self._ready:
            return
        self.check_store()
        with self._lock:
            if self._ready:
                return
            started = time.perf_counter()
            report = self.app.use_cases.repair()()
            logger.info("stores_repaired orphan_vectors={} stale_vectors={} latency_ms={:.0f}",
                        report.orphan_vectors_removed, report.stale_vectors_removed,
                        (time.perf_counter() - started) * 1000)
            self._ready = True

    def warm_up(self, delay: float = WARM_UP_DELAY, load_model: bool = True) -> None:
        """Background: check and repair the stores, load the model; a store that cannot be served ends the process."""
        def run() -> None:
            # Opening the stores and loading the model hold the GIL for ~2 s; starting at once would
            # slow the client's initialize and tools/list, which arrive right after the spawn.
            time.sleep(delay)
            try:
                self.ensure_ready()
                if load_model:
                    self.app.adapters.embedder().embed_query("warm up")
                    logger.info("warm_up_done")
            except ConfigurationError as exc:  # one line, as a failed start would print
                print(f"memtrove: {exc.message}", file=sys.stderr, flush=True)
                os._exit(2)
            except Exception as exc:  # the first real call will report it properly
                logger.warning("warm_up_failed error={}", exc)

        threading.Thread(target=run, name="memtrove-warmup", daemon=True).start()

    def shutdown(self) -> None:
        self.app.shutdown_resources()
