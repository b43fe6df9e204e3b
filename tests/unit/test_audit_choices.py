"""The audit page's filters offer what the log holds (ReadAudit.choices): the owner every actor, action and
kind; anyone else their own entries' (issue 42: the filters were free text over a mixed vocabulary)."""

from __future__ import annotations

from domain.access.audit import AuditChoices, ReadAudit
from domain.access.principal import Principal, RequestContext
from tests.unit.test_audit_reading import log


def choices(who: str) -> AuditChoices:
    return ReadAudit(log(), identity=lambda: RequestContext(Principal(who))).choices()


def test_the_owner_is_offered_everything_in_the_log() -> None:
    assert choices("local") == AuditChoices(("bob", "carol", "local"), ("delete", "denied", "edit", "store"),
                                            ("artifact", "memory"))


def test_another_caller_is_offered_its_own_entries_choices_only() -> None:
    assert choices("bob") == AuditChoices(("bob",), ("delete", "store"), ("artifact", "memory"))
    assert choices("dave") == AuditChoices(("dave",), (), ())
