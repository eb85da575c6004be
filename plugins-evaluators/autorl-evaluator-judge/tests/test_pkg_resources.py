"""alpaca_eval imports ``pkg_resources``; the stand-in used for that import must not stay in
``sys.modules``, where other code (pytest's ``syspath_prepend``) would take it for setuptools'."""

from __future__ import annotations

import sys


def test_the_pkg_resources_stand_in_does_not_outlive_the_import() -> None:
    from autorl_evaluator_judge import alpaca

    namespace = alpaca.modules()
    assert namespace.utils is not None and namespace.glm is not None
    leftover = sys.modules.get("pkg_resources")
    assert leftover is None or hasattr(leftover, "fixup_namespace_packages")
