"""``memtrove token create|list|grant|revoke``: the bearer tokens HTTP clients present, each naming a principal.

A token reaches no project (documents, project searches, restore bundles) unless given one with
--project (repeatable; ``'*'``: every project); ``grant`` opens more projects to a live token. Only a hash of each secret is stored; the secret is printed once, at creation. A revoked token is
refused from the next request on. It runs beside a running server: it opens only the SQL store (no
vector index, no embedder, no data dir lock), and SQLite takes its one short write in turn (WAL).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator

from config.settings import Settings
from domain.access.principal import SENSITIVITIES, Principal
from domain.access.tokens import CreateToken, GrantProjects, ListTokens, RevokeToken, project_names
from domain.errors import NotFoundError, ValidationError
from domain.ports.identity import TokenInfo, TokenStore

NOT_FOUND = 1
BAD_INPUT = 2
# The command-line spelling of each field a ValidationError may name.
FLAGS = {"user_id": "--user", "team": "--team", "org": "--org", "clearance": "--clearance",
         "project": "--project", "label": "--label", "token_id": "TOKEN_ID"}


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    token = commands.add_parser("token", help="manage the bearer tokens of HTTP clients")
    actions = token.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="issue a token for a principal (its secret is shown once)")
    create.add_argument("--user", required=True, help="the principal's user id")
    create.add_argument("--team", action="append", default=[], help="a team of the principal (repeatable)")
    create.add_argument("--org", default=None, help="the principal's organisation")
    # Checked by the domain, not by argparse `choices`: a bad value is then one line naming the field.
    create.add_argument("--clearance", default="normal", help=f"one of {', '.join(SENSITIVITIES)} (default normal)")
    create.add_argument("--project", action="append", default=[],
                        help="a project the token may work in (repeatable; '*': every project; default: none)")
    create.add_argument("--label", default=None, help="what the token is for")
    listing = actions.add_parser("list", help="every token, revoked ones too (never a secret)")
    listing.add_argument("--json", action="store_true", help="a JSON array of the tokens")
    grant = actions.add_parser("grant", help="open more projects to a live token, from its next request on")
    grant.add_argument("token_id", metavar="TOKEN_ID")
    grant.add_argument("--project", action="append", required=True,
                       help="a project the token may work in too (repeatable; '*': every project)")
    revoke = actions.add_parser("revoke", help="revoke a token: refused from the next request on")
    revoke.add_argument("token_id", metavar="TOKEN_ID")


@contextlib.contextmanager
def opened_store(settings: Settings) -> Iterator[TokenStore]:
    """The store of the configured data dir (or database), built by the container and closed after."""
    # Imported here: the parser of every `memtrove` command imports this module, the bridge's too.
    from config.container import Application

    settings.memtrove_data_dir.mkdir(parents=True, exist_ok=True)
    app = Application(settings=settings)
    try:
        yield app.adapters.store()
    finally:
        app.shutdown_resources()


def run_token(settings: Settings, args: argparse.Namespace) -> int:
    try:
        with opened_store(settings) as store:
            return _run(store, args)
    except ValidationError as exc:
        print(f"memtrove: invalid {FLAGS.get(exc.field, exc.field)}: {exc.message}", file=sys.stderr)
        return BAD_INPUT
    except NotFoundError as exc:
        print(f"memtrove: {exc.message} (see `memtrove token list`)", file=sys.stderr)
        return NOT_FOUND


def _run(store: TokenStore, args: argparse.Namespace) -> int:
    if args.action == "create":
        principal = Principal(args.user, tuple(args.team), args.org, args.clearance, project_names(args.project))
        issued = CreateToken(store)(principal, args.label)
        print(f"token_id: {issued.token_id}\nsecret:   {issued.secret}")
        print("Keep the secret now: memtrove stores only its hash and cannot show it again.", file=sys.stderr)
        if principal.projects == ():
            print("It reaches no project: give --project NAME (or '*') to open projects to it, or later "
                  f"`memtrove token grant {issued.token_id} --project NAME`.", file=sys.stderr)
    elif args.action == "grant":
        info = GrantProjects(store)(args.token_id, args.project)
        print(f"{info.token_id} reaches {projects_shown(info.principal.projects)}")
    elif args.action == "revoke":
        RevokeToken(store)(args.token_id)
        print(f"revoked {args.token_id}")
    elif args.json:
        print(json.dumps([shown(info) for info in ListTokens(store)()], indent=2, ensure_ascii=False))
    else:
        print(table(ListTokens(store)()))
    return 0


def shown(info: TokenInfo) -> dict[str, object]:
    p = info.principal
    return {"token_id": info.token_id, "user": p.user_id, "teams": list(p.teams), "org": p.org,
            "clearance": p.clearance, "projects": None if p.projects is None else list(p.projects),
            "label": info.label, "created_at": info.created_at, "revoked_at": info.revoked_at,
            "narrowed_at": info.narrowed_at}


def projects_shown(projects: tuple[str, ...] | None) -> str:
    if projects is None:
        return "every project"
    if not projects:
        return "no project"
    return ("project " if len(projects) == 1 else "projects ") + ", ".join(projects)


def table(infos: list[TokenInfo]) -> str:
    """One line per token under a header, columns aligned; ``-`` for nothing, ``*`` for every project
    (``-(narrowed)``: no project since the upgrade to least privilege, see `memtrove doctor`)."""
    if not infos:
        return "no tokens (create one with `memtrove token create --user USER`)"
    header = ("ID", "USER", "TEAMS", "ORG", "CLEARANCE", "PROJECTS", "LABEL", "CREATED", "REVOKED")
    rows = [header] + [(i.token_id, i.principal.user_id, ",".join(i.principal.teams) or "-", i.principal.org or "-",
                        i.principal.clearance,
                        "*" if i.principal.projects is None else ",".join(i.principal.projects)
                        or ("-(narrowed)" if i.narrowed_at else "-"),
                        " ".join((i.label or "-").split()), i.created_at, i.revoked_at or "-") for i in infos]
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)
