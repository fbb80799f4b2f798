"""config/README.md documents every config key: each key of the workflow's schema
(workflow/schemas/config.schema.yaml) and of the bench's study schema (gdpo/sim/schema.py) has a row, and
every row names a key that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gdpo.sim import schema as study_schema

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "config" / "README.md"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
#: The heading that starts the study files' part of the README.
STUDIES_HEADING = "## Studies of the policy-gradient bench"
#: Where a block defined once in the schema's ``$defs`` is documented: its keys' prefix.
DEFS_PREFIX = {"task": "tasks.<name>", "training": "training", "evaluation": "evaluation",
               # a methods: entry; its keys (each method's options) are filled in from gdpo.methods
               "method": "methods[]"}
#: Study keys whose value is a list of mappings: their keys are written ``key[].sub``.
STUDY_LISTS = {"rewards", "correlations", "extra_cells"}


def _keys(node: dict, prefix: str) -> list[str]:
    """Dotted paths of the keys under ``node``; a mapping of names (``additionalProperties``) is ``<name>``, a
    ``$ref`` is documented where it is defined, so it is not followed."""
    paths = []
    for key, value in (node.get("properties") or {}).items():
        path = f"{prefix}.{key}" if prefix else key
        paths.append(path)
        if "$ref" not in value:
            paths += _keys(value, path)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "$ref" not in extra:
        paths += _keys(extra, f"{prefix}.<name>")
    return paths


def workflow_keys() -> list[str]:
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    paths = _keys(schema, "")
    for name, definition in schema["$defs"].items():
        paths += _keys(definition, DEFS_PREFIX[name])
    return paths


def study_keys() -> list[str]:
    paths = []
    for bench in study_schema.SCHEMAS.values():
        paths += list(bench.keys)
        for key, subkeys in bench.sub_keys.items():
            paths += [f"{key}[].{sub}" if key in STUDY_LISTS else f"{key}.{sub}" for sub in subkeys]
    return sorted(set(paths))


def documented(part: str) -> set[str]:
    """The keys of the README's key tables (those whose header starts ``| key |``) in ``part``
    (``workflow`` or ``studies``), placeholders as ``<name>``."""
    text = README.read_text(encoding="utf-8")
    before, _, after = text.partition(STUDIES_HEADING)
    keys, in_table = set(), False
    for line in (before if part == "workflow" else after).splitlines():
        if line.startswith("| key |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and (row := re.match(r"\| `([^`]+)` \|", line)):
            keys.add(re.sub(r"<[^>]+>", "<name>", row.group(1)))
    return keys


def test_the_readme_has_the_studies_part():
    assert STUDIES_HEADING in README.read_text(encoding="utf-8")


@pytest.mark.parametrize(("part", "keys"), [("workflow", workflow_keys), ("studies", study_keys)])
def test_every_config_key_has_a_row(part, keys):
    missing = [key for key in keys() if key not in documented(part)]
    assert not missing, f"config/README.md has no row for these keys ({part}): {missing}"


@pytest.mark.parametrize(("part", "keys"), [("workflow", workflow_keys), ("studies", study_keys)])
def test_every_row_is_a_config_key(part, keys):
    stale = sorted(documented(part) - set(keys()))
    assert not stale, f"config/README.md documents keys its schema does not have ({part}): {stale}"


def test_a_new_schema_key_is_caught():
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    schema["$defs"]["training"]["properties"]["new_trl_switch"] = {"type": "boolean"}
    assert "training.new_trl_switch" in _keys(schema["$defs"]["training"], "training")
    assert "training.new_trl_switch" not in documented("workflow")
