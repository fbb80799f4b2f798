"""Claims added after the paper's, one module per claim (``docs/add-a-claim.md``).

A claim's module registers everything the suite needs of it: its contract
(:func:`gdpo.reporting.verdicts.registry.register_claim`), its rules with their power designs and validity
conditions (:func:`gdpo.reporting.verdicts.registry.claim_rule`), and its decision. Every module of this package
is imported when the package is (:mod:`gdpo.reporting.verdicts` imports it after the paper's rules), so a new
claim's module needs no line anywhere else.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
