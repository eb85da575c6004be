"""The one table of kinds is what every per-kind table is made from (the testing kit's
conformance table is checked in autorl-testing's tests)."""

from __future__ import annotations

from autorl import hookspecs, protocols, specs
from autorl.kinds import KINDS, PLURALS


def test_every_table_follows_the_kinds() -> None:
    assert tuple(specs.SPEC_TYPES) == tuple(KINDS) == specs.KINDS
    assert {n: k.hook for n, k in KINDS.items()} == hookspecs.REGISTRATION_HOOKS
    for name, kind in KINDS.items():
        assert specs.SPEC_TYPES[name].kind == name
        assert callable(getattr(hookspecs, kind.hook)), kind.hook
        if kind.protocol:
            assert protocols.PROTOCOLS[name].__name__ == kind.protocol
        assert PLURALS[kind.plural] == name
    assert PLURALS["sandboxes"] == "sandbox"
