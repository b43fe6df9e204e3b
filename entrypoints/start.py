"""The few settings a stdio ``memtrove serve`` needs to start, remembered per environment.

Settings come from environment variables only (config/settings.py: no .env file), so the same
variables, code and installed packages give the same settings. A start that loads them (pydantic-
settings: 0.3-0.6 s on two busy cores) records what a stdio start needs under a fingerprint of those
variables; a later start with the same fingerprint reads that record and bridges (or answers early)
without loading the settings machinery at all. A variable that changes, a new one memtrove reads,
an edited module or an upgraded package changes the fingerprint: such a start loads the settings again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from entrypoints.answers import cache_dir, code_key

if TYPE_CHECKING:
    from config.settings import Settings

# Besides the settings' own variables, the default data dir (platformdirs) reads these.
DEFAULTS_FROM = ("HOME", "XDG_DATA_HOME")
# Its value is read at each start, not fingerprinted: a new data dir starts as fast as a known one.
DATA_DIR = "memtrove_data_dir"
KEPT_ENVIRONMENTS = 16
KEPT_CODE_VERSIONS = 4


@dataclass(frozen=True, slots=True)
class StartSettings:
    data_dir: str  # as the settings give it; resolved where it is used (the working dir may differ)
    embedder: str  # entrypoints/shared.py embedder_label
    toolsets: tuple[str, ...]
    answers: str  # entrypoints/answers.py answers_key
    shared: bool
    transport: str
    log_level: str
    log_format: str

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir).expanduser().resolve()


def start_settings(settings: Settings) -> StartSettings:
    from entrypoints.answers import answers_key
    from entrypoints.shared import embedder_label

    return StartSettings(str(settings.memtrove_data_dir), embedder_label(settings), tuple(settings.toolsets),
                         answers_key(settings), settings.memtrove_shared, settings.memtrove_transport,
                         settings.log_level, settings.memtrove_log_format)


def record_path(folder: Path | None = None) -> Path:
    return (folder or cache_dir().parent) / f"start-{code_key()}.json"


def environment_key(names: list[str]) -> str:
    """A fingerprint of the variables named (any case, as the settings read them); of MEMTROVE_DATA_DIR,
    only whether it is set."""
    wanted = {name.lower() for name in names} | {name.lower() for name in DEFAULTS_FROM}
    pairs = sorted((name, "" if name.lower() == DATA_DIR else value)
                   for name, value in os.environ.items() if name.lower() in wanted)
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:32]


def data_dir_variable() -> str | None:
    """MEMTROVE_DATA_DIR's value (the settings read it as ``Path(value)``), or None when unset."""
    values = [value for name, value in os.environ.items() if name.lower() == DATA_DIR]
    return values[0] if len(values) == 1 else None


def recall(folder: Path | None = None) -> StartSettings | None:
    """This environment's remembered start settings, if a start of the same code recorded them."""
    try:
        record = json.loads(record_path(folder).read_text(encoding="utf-8"))
        found = record["environments"].get(environment_key(record["names"]))
        if not found or sum(name.lower() == DATA_DIR for name in os.environ) > 1:
            return None  # spelt twice in two cases: which one the settings take is theirs to say
        data_dir = found["data_dir"] if (variable := data_dir_variable()) is None else variable
        return StartSettings(**{**found, "toolsets": tuple(found["toolsets"]), "data_dir": data_dir})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def remember(settings: Settings, folder: Path | None = None) -> StartSettings:
    """The start settings of ``settings`` (loaded from this environment), recorded for later starts."""
    start = start_settings(settings)
    names = sorted(type(settings).model_fields)
    path = record_path(folder)
    try:
        record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        environments = record["environments"] if record.get("names") == names else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        environments = {}
    environments.pop(key := environment_key(names), None)
    environments[key] = dataclasses.asdict(start)  # the newest last; the oldest dropped past KEPT_ENVIRONMENTS
    kept = dict(list(environments.items())[-KEPT_ENVIRONMENTS:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps({"names": names, "environments": kept}), encoding="utf-8")
        os.replace(temporary, path)
        records = sorted(path.parent.glob("start-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in records[KEPT_CODE_VERSIONS:]:  # older code versions' records
            stale.unlink(missing_ok=True)
    except OSError:
        pass  # a cache: a start without it is only slower
    return start
