"""The kit's conformance classes follow core's one table of kinds."""

from __future__ import annotations

import autorl_testing
from autorl_testing.conformance import CONFORMANCE_BY_KIND

from autorl.kinds import KINDS


def test_every_kind_with_a_conformance_class_exports_it() -> None:
    named = {name: kind.conformance for name, kind in KINDS.items() if kind.conformance}
    assert set(CONFORMANCE_BY_KIND) == set(named), (set(CONFORMANCE_BY_KIND), set(named))
    for name, conformance in named.items():
        assert CONFORMANCE_BY_KIND[name].kind == name
        assert getattr(autorl_testing, conformance) is CONFORMANCE_BY_KIND[name]
        assert conformance in autorl_testing.__all__
