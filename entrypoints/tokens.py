"""``memtrove token create|list|revoke``: the bearer tokens HTTP clients present, each naming a principal.

Only a hash of each secret is stored; the secret is printed once, at creation. A revoked token is
refused from the next request on. Runs beside a running server (it opens only the SQL store).
"""

from __future__ import annotations

import argparse
import json


from config.settings import Settings
from domain.access.principal import SENSITIVITIES, Principal
from domain.access.tokens import CreateToken, RevokeToken
from domain.ports.identity import TokenInfo
from entrypoints.runtime import Runtime


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    token = commands.add_parser("token", help="manage the bearer tokens of HTTP clients")
    actions = token.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="issue a token for a principal (its secret is shown once)")
    create.add_argument("--user", required=True, help="the principal's user id")
    create.add_argument("--team", action="append", default=[], help="a team of the principal (repeatable)")
    create.add_argument("--org", default=None, help="the principal's organisation")
    create.add_argument("--clearance", default="normal", help=f"one of {', '.join(SENSITIVITIES)} (default normal)")
    create.add_argument("--project", action="append", default=None,
                        help="a project the token may work in (repeatable; default: every project)")
    create.add_argument("--label", default=None, help="what the token is for")
    listing = actions.add_parser("list", help="every token (never a secret)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    revoke = actions.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("token_id")


def run_token(settings: Settings, args: argparse.Namespace) -> int:
    runtime = Runtime(settings)
    runtime.start()
    store = runtime.app.adapters.store()
    if args.action == "create":
        principal = Principal(args.user, tuple(args.team), args.org, args.clearance,
                              None if args.project is None else tuple(args.project))
        issued = CreateToken(store)(principal, args.label)
        print(f"token_id: {issued.token_id}\nsecret:   {issued.secret}\n"
              "Keep the secret now: memtrove stores only its hash and cannot show it again.")
        return 0
    if args.action == "revoke":
        RevokeToken(store)(args.token_id)
        print(f"revoked {args.token_id}")
        return 0
    for info in store.list_tokens():
        print(json.dumps(shown(info)) if args.json else _line(info))
    return 0


def shown(info: TokenInfo) -> dict[str, object]:
    p = info.principal
    return {"token_id": info.token_id, "user": p.user_id, "teams": list(p.teams), "org": p.org,
            "clearance": p.clearance, "projects": None if p.projects is None else list(p.projects),
            "label": info.label, "created_at": info.created_at, "revoked_at": info.revoked_at}


def _line(info: TokenInfo) -> str:
    row = shown(info)
    state = f"revoked {info.revoked_at}" if info.revoked_at else "active"
    return (f"{row['token_id']}  {row['user']}  teams={','.join(info.principal.teams) or '-'}  org={row['org'] or '-'}"
            f"  clearance={row['clearance']}  projects={','.join(info.principal.projects or ()) or 'all'}"
            f"  label={row['label'] or '-'}  created {row['created_at']}  {state}")


