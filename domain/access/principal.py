"""A caller's identity (spec 000 §5.4, "v3"): a principal with teams, an org, a clearance and the
projects it may work in; and the request context every use case receives from its entrypoint."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from domain.errors import ValidationError

SENSITIVITIES = ("normal", "sensitive", "highly_sensitive")  # as domain.model, in rising order
RANK = {name: rank for rank, name in enumerate(SENSITIVITIES)}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")  # user ids, team and org names
LOCAL_USER = "local"


def check_name(field_name: str, value: object) -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise ValidationError(field_name, f"{field_name} must be 1-100 characters of letters, digits, '.', '_', "
                                          f"'@' or '-', starting with a letter or digit (got {value!r})")
    return value


@dataclass(frozen=True, slots=True)
class Principal:
    """A user as the server knows it. ``projects`` None: every project; else only those named."""

    user_id: str
    teams: tuple[str, ...] = ()
    org: str | None = None
    clearance: str = "normal"
    projects: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_name("user_id", self.user_id)
        for team in self.teams:
            check_name("team", team)
        if self.org is not None:
            check_name("org", self.org)
        if self.clearance not in RANK:
            raise ValidationError("clearance", f"clearance must be one of {', '.join(SENSITIVITIES)} "
                                               f"(got {self.clearance!r})")

    @property
    def audience(self) -> tuple[str, ...]:
        """The audience keys this caller answers to: ``u:<user>``, ``t:<team>`` each, ``o:<org>``, and
        its projects' (``p:<project>`` each, or ``p:*`` for all)."""
        keys = [f"u:{self.user_id}", *(f"t:{t}" for t in sorted(set(self.teams)))]
        keys += [f"o:{self.org}"] if self.org else []
        # Project items are shared with their project: "p:<project>", and "p:*" for every project.
        keys += ["p:*"] if self.projects is None else [f"p:{p}" for p in sorted(set(self.projects))]
        return tuple(keys)

    def may_read(self, sensitivity: str) -> bool:
        """Up to its clearance; an unknown sensitivity counts as the highest."""
        return RANK.get(sensitivity, len(RANK)) <= RANK[self.clearance]

    def sensitivities(self) -> tuple[str, ...]:
        return tuple(s for s in SENSITIVITIES if self.may_read(s))

    def in_project(self, project: str) -> bool:
        return self.projects is None or project in self.projects


def local_principal(clearance: str = "sensitive") -> Principal:
    """The local owner: whoever runs the server over stdio or its local socket."""
    return Principal(LOCAL_USER, clearance=clearance)


@dataclass(slots=True)
class AccessTally:
    """What the access rule did during one call, for its log line and the metrics: the records a search
    fetched and withheld (rows an index returned that the caller may not see, hits a policy removed;
    what an index filters itself never leaves it), and each refusal the caller could notice."""

    withheld: set[str] = field(default_factory=set)
    denials: list[tuple[str, str]] = field(default_factory=list)  # (action, reason)


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who is asking, built by the entrypoint from its transport and handed to every use case."""

    principal: Principal = field(default_factory=local_principal)
    request_id: str | None = None
    via: str | None = None  # the client it came through: its token's id, "shared token", "page"; None: local
    scopes: tuple[str, ...] = ()
    as_of: float | None = None  # a search as of this time (epoch): memories valid then; None: those valid now
    tally: AccessTally = field(default_factory=AccessTally, compare=False, repr=False)

    @property
    def actor(self) -> str:
        return self.principal.user_id


# Who is calling, asked by a use case when it needs to know: the transport's answer for the running call.
Identity = Callable[[], RequestContext]
