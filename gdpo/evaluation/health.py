"""Former home of the collapse gate, now :mod:`gdpo.generation.health`.

Kept only for :mod:`gdpo.reporting.aggregate`, which still imports the gate from here; import
:mod:`gdpo.generation.health` everywhere else. Remove this file once that import is moved
(``tests/test_import_direction.py`` allows no other importer).
"""

from gdpo.generation.health import (  # noqa: F401
    ACTIVITY,
    MAX_TRUNCATED_PERCENT,
    MIN_ACTIVITY_PERCENT,
    NO_HEALTH_BLOCK,
    TRUNCATED,
    collapse_reasons,
    health_record,
    not_judged_reason,
)
