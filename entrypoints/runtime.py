"""The running service: the container, the store check, and the background work that follows the store."""

from __future__ import annotations

import contextvars
import gc
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from loguru import logger

from config.container import Application
from config.settings import Settings
from entrypoints.fatal import say_fatal
from domain.errors import ConfigurationError, MemtroveError
from domain.model import IngestJob
from domain.artifacts.resume import ResumeIngests
from domain.documents.usecases import ItemWriter
from domain.upkeep.retention import ExpireItems
from adapters.metrics import Metrics, outbox_backlog
from domain.upkeep.vector_sync import SyncVectors
from entrypoints.graph_worker import graph_loop
from entrypoints.switch import Gate, ModelSwitch, Switching

WARM_UP_DELAY = 1.0
IDLE_POLL = 0.2  # seconds between looks at the outbox when no local write announced work
# Seconds a kicked vector worker lets writes gather before syncing them. Chroma's upsert costs about
# 16 ms a call on top of its cost per vector, and holds the GIL meanwhile: one call per artifact was
# half of an ingest's time. Searches never wait for this: each brings the index up to date itself
# (catch_up). A shutdown ends the wait at once.
GATHER = 0.5
RETENTION_SWEEP = 300.0  # seconds between sweeps for expired items
DOCUMENTS_SWEEP = 60.0  # seconds between looks for item versions whose artifact a stopped write never wrote
DOCUMENTS_GRACE = 30.0  # a version this recent may still be written by its own call: left to it
T = TypeVar("T")


class Runtime(Switching):
    """Holds the container for an entrypoint; stores are checked before a tool touches them.

    Once ready it runs two background threads: the vector worker (moves committed work from the
    store's outbox into the vector index) and the job resumer (finishes ingests a crash left).
    """

    def __init__(self, settings: Settings, app: Application | None = None, long_lived: bool = False) -> None:
        """``long_lived``: a server's, whose start is settled (see ``settle``) once it is ready."""
        self.settings = settings
        self._long_lived = long_lived
        self.app = app or Application(settings=settings)
        self._checked = False
        self._ready = False
        self._lock = threading.Lock()
        self._work = threading.Event()
        self._graph_work = threading.Event()  # the background graph's wake-up (entrypoints/graph_worker.py)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.metrics: Metrics = self.app.adapters.metrics()
        self.metrics.watch_backlog(lambda: outbox_backlog(self.app.adapters.store()) if self._ready else 0.0)
        self._builders: dict[type, Callable[..., object]] = {}
        self.gate = Gate()  # tool calls pass together; a model switch alone (entrypoints/switch.py)
        self.switch: ModelSwitch | None = None

    def use_case(self, kind: type[T]) -> Callable[..., T]:
        """The composition root's builder of the use case of this type (called per call: building one
        opens nothing until it runs)."""
        builder = self._builders.get(kind)
        if builder is None:
            for provider in self.app.use_cases.providers.values():
                made = getattr(provider, "provides", None)
                if made is kind or getattr(made, "__annotations__", {}).get("return") in (kind, kind.__name__) or (
                        isinstance(made, type) and getattr(kind, "_is_protocol", False) and issubclass(made, kind)):
                    builder = self._builders[kind] = provider
                    break
            else:
                raise LookupError(f"no use case of type {kind.__name__} in the container")
        return builder  # type: ignore[return-value]

    def start(self) -> None:
        """Checks that need no store: the data dir exists, the chunk sizes suit the model."""
        self.settings.memtrove_data_dir.mkdir(parents=True, exist_ok=True)
        self.app.use_cases.chunk_spec()
        if self.settings.memtrove_privacy_policies or self.settings.memtrove_plugins:
            self.app.plugins.registry()  # privacy policies fail closed: a broken one stops the start here
        chosen = self.settings.memtrove_chunker
        if chosen != "auto":  # plugins load on first use otherwise: a fast start
            available = self.app.plugins.registry().names()
            if chosen not in available:
                raise ConfigurationError(f"Invalid setting MEMTROVE_CHUNKER={chosen!r}: must be auto or one of: "
                                         f"{', '.join(available)}")

    def check_store(self) -> None:
        """The store's embedding profile matches the configured embedder (recorded on first use); a
        store built with the other local model is served with it while a switch re-embeds it."""
        with self._lock:
            if self._checked:
                return
            if self.switch is None:
                self._plan_switch()
            profile = self.app.use_cases.check_profile()()
            logger.info("store_opened profile={}/{}/{} data_dir={}", profile.provider, profile.model,
                        profile.dimensions, self.settings.memtrove_data_dir)
            self._checked = True

    def ensure_ready(self) -> None:
        """Check the store, open the vector index, start the background work; once."""
        if self._ready:
            return
        self.check_store()
        with self._lock:
            if self._ready:
                return
            adopted = self.app.use_cases.adopt_vectors()()
            if adopted:
                logger.info("vectors_adopted count={} (the store now holds the index's vectors)", adopted)
            # Built here, in one thread, before the background threads start: two threads importing
            # the same libraries at once can see them half-loaded.
            sync = self.app.use_cases.sync_vectors()
            resume = self.app.use_cases.resume_ingests()
            # Jobs open before any call of this process ran: orphans of a crash (on SQLite, taken at once).
            orphans = self.app.adapters.store().open_jobs()
            writer = self.app.use_cases.item_writer()
            expire = self.app.use_cases.expire_items()
            follow = self.app.use_cases.follow_graph() if self.settings.memtrove_graph_background else None
            self._spawn("memtrove-vectors", lambda: self._sync_loop(sync))
            self._spawn("memtrove-resume", lambda: self._resume_loop(resume, orphans))
            self._spawn("memtrove-documents", lambda: self._documents_loop(writer))
            self._spawn("memtrove-retention", lambda: self._retention_loop(expire))
            if follow is not None:
                self._spawn("memtrove-graph", lambda: graph_loop(follow, self._stop, self._graph_work, self._round))
            if self.switch is not None and self.switch.state == "re-embedding":
                self._spawn("memtrove-switch", self._run_switch)
            self._ready = True
            if self._long_lived:
                settle()

    def kick(self) -> None:
        """A write was committed here: the vector worker and the graph's need not wait for their next look."""
        self._work.set()
        self._graph_work.set()

    def in_background(self, work: Callable[[], T]) -> Future[T]:
        """Run ``work`` in a thread of its own that outlives the call waiting for it (a long ingest)."""
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                future.set_exception(exc)
            finally:
                self.kick()

        # In the call's context: the work runs as the caller (its request scope), not as nobody; and
        # it holds the call's pass through the gate until it ends, though the call may answer before.
        called, release = contextvars.copy_context(), self.gate.share()

        def passing() -> None:
            try:
                called.run(run)
            finally:
                release()

        threading.Thread(target=passing, name="memtrove-call", daemon=True).start()
        return future

    def _spawn(self, name: str, loop: Callable[[], None]) -> None:
        def run() -> None:
            try:
                loop()
            except Exception as exc:  # noqa: BLE001 - say so rather than die silently
                logger.opt(exception=exc).error("background_thread_died name={}", name)

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _round(self, job: str, work: Callable[[], T], worked: Callable[[T], bool] = bool) -> T:
        """One round of a background job, timed in the metrics when it did work (a failure counted)."""
        started = time.perf_counter()
        try:
            result = work()
        except Exception:
            self.metrics.observe_job(job, 0.0, failed=True)
            raise
        if worked(result):
            self.metrics.observe_job(job, time.perf_counter() - started)
        return result

    def _sync_loop(self, sync: SyncVectors) -> None:
        while not self._stop.is_set():
            if self._work.wait(IDLE_POLL):
                self._stop.wait(GATHER)
            self._work.clear()
            try:
                done = self._round("vector_sync", sync.drain)
                if done:
                    logger.debug("vectors_synced items={}", done)
            except MemtroveError as exc:  # the outbox keeps the work: the next round retries it
                logger.warning("vector_sync_failed error={}", exc.message)
                self._stop.wait(1.0)
            except Exception as exc:  # noqa: BLE001 - the worker must outlive a bug in one round
                logger.opt(exception=exc).error("vector_sync_crashed")
                self._stop.wait(1.0)

    def _resume_loop(self, resume: ResumeIngests, orphans: list[IngestJob]) -> None:
        store = self.app.adapters.store()
        first = True
        every = max(1.0, self.settings.memtrove_job_lease / 2)
        while not self._stop.is_set():
            try:
                started = time.perf_counter()
                count = self._round("ingest_resume", lambda: resume(on_error=lambda job, exc: logger.warning(
                    "ingest_resume_failed artifact_id={} error={}", job.artifact_id, exc.message),
                    jobs=orphans if resume.exclusive or first else None))
                first = False
                if count:
                    logger.info("ingests_resumed count={} latency_ms={:.0f}", count,
                                (time.perf_counter() - started) * 1000)
                    self.kick()
            except Exception as exc:  # noqa: BLE001 - try again at the next round
                logger.warning("ingest_resume_crashed error={}", exc)
            if resume.exclusive:
                # Nobody else can leave jobs behind while this process runs: done once its orphans are.
                orphans = [j for j in orphans if (now := store.ingest_job(j.artifact_id)) is not None
                           and now.status == "indexing" and now.version == j.version]
                if not orphans:
                    return
            self._stop.wait(every)

    def _retention_loop(self, expire: ExpireItems) -> None:
        """Remove expired items everywhere (reads already hide them), once per round across replicas."""
        while not self._stop.is_set():
            try:
                removed = self._round("retention_sweep", expire)
                if removed:
                    logger.info("items_expired count={}", removed)
                    self.kick()
            except Exception as exc:  # noqa: BLE001 - try again at the next round
                logger.warning("retention_sweep_failed error={}", exc)
            self._stop.wait(RETENTION_SWEEP)

    def _documents_loop(self, writer: ItemWriter) -> None:
        """Project items' versions left without their artifact (searchable again without another write)."""
        while not self._stop.is_set():
            try:
                done, failed = self._round("projection_sweep", lambda: writer.project_pending(
                    time.time() - DOCUMENTS_GRACE), lambda result: bool(result[0] or result[1]))
                if done:
                    logger.info("item_versions_projected count={}", done)
                    self.kick()
                for version, exc in failed:
                    logger.warning("item_projection_failed item_id={} version={} error={}", version.item_id,
                                   version.version_num, getattr(exc, "message", exc))
            except Exception as exc:  # noqa: BLE001 - try again at the next round
                logger.warning("item_projection_crashed error={}", exc)
            self._stop.wait(DOCUMENTS_SWEEP)

    def warm_up(self, delay: float = WARM_UP_DELAY, load_model: bool = True) -> None:
        """Background: check the stores and start their work, load the model; a store that cannot be served ends the process."""
        def run() -> None:
            # Opening the stores and loading the model hold the GIL for ~2 s; starting at once would
            # slow the client's initialize and tools/list, which arrive right after the spawn.
            time.sleep(delay)
            try:
                self.ensure_ready()
                if load_model:
                    self.app.adapters.embedder().embed_query("warm up")
                    if self._long_lived:
                        settle()
                    logger.info("warm_up_done")
            except ConfigurationError as exc:  # one line, as a failed start would print
                say_fatal(exc.message)
                os._exit(2)
            except Exception as exc:  # the first real call will report it properly
                logger.warning("warm_up_failed error={}", exc)

        threading.Thread(target=run, name="memtrove-warmup", daemon=True).start()

    def shutdown(self) -> None:
        self._stop.set()
        self._work.set()
        for thread in self._threads:
            thread.join(timeout=5.0)
        self.app.shutdown_resources()


def settle() -> None:
    """What the start made lives as long as the process: the garbage collector stops scanning it. A
    full collection scanned it every time, 80-100 ms at 1M chunks, a pause in whichever call was running."""
    gc.collect()
    gc.freeze()
