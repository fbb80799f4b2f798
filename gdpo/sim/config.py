"""Study files of the policy-gradient bench: YAML → validated, frozen :class:`Study`.

A study is reward definitions + methods + seeds + steps + prompts + G + learning rate + options, and
optionally named *variants* (each a set of overrides of the study's keys) or a *grid* (the cartesian
product of a few keys' values, which generates the variants), optionally *extra cells* varied one factor
at a time around a cell of the grid or a variant (``extra_cells``, see :func:`build_study`), and optionally
*positive controls* (``positive_controls``: named cells whose settings are engineered so that the study's
outcome event does happen, run and reported like every cell but marked as controls). Every key is
checked; a bad one raises ``ValueError`` naming the key, what is allowed there and the file.

What each key means, its default and its check, for both benches (``bench: bernoulli``, the default, and
``bench: sequence``), and the override rules of a variant are in :mod:`gdpo.sim.schema`; this module makes a
file's cells (:func:`build_study`) and checks a study mapping (:func:`parse_study`). It builds no reward
model: :func:`gdpo.sim.study.load_study` reads a file and also refuses difficulties and correlations the
Bernoulli reward model (:mod:`gdpo.sim.rewards`) cannot meet.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gdpo.config import read_yaml
from gdpo.sim.schema import (
    BENCHES, BERNOULLI, CONTROL_FIXED_KEYS, CONTROL_PREFIX, EXTRA_CELL_KEYS, EXTRA_CELLS_HELP, NOT_OVERRIDABLE,
    POSITIVE_CONTROLS_HELP, SCHEMAS, BenchSchema, Checker, RunConfig, SequenceRunConfig, apply_overrides, grid_label,
    resolve,
)


@dataclasses.dataclass(frozen=True)
class Study:
    """A validated study file. ``variants`` maps variant name → its resolved :class:`~gdpo.sim.schema.RunConfig`
    (:class:`~gdpo.sim.schema.SequenceRunConfig` on the sequence bench), in file
    order; a study without variants has the single variant ``"default"``. ``controls``: the names of the
    variants that are positive controls (``control:<name>``, after every other cell)."""

    name: str
    description: str
    claims: tuple[str, ...]
    path: str
    variants: tuple[tuple[str, RunConfig | SequenceRunConfig], ...]
    controls: tuple[str, ...] = ()

    def is_control(self, name: str) -> bool:
        """Whether the variant ``name`` is a positive control."""
        return name in self.controls

    def variant(self, name: str) -> RunConfig | SequenceRunConfig:
        for variant_name, config in self.variants:
            if variant_name == name:
                return config
        raise ValueError(
            f"study {self.name!r} ({self.path}) has no variant {name!r}; its variants are: "
            f"{', '.join(v for v, _ in self.variants)}."
        )

    @property
    def variant_names(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.variants)


def _merge_patch(old: Any, new: Any) -> Any:
    """``new`` on top of ``old`` where both are mappings (patches such as ``base`` or ``rewards``), key by key and
    recursively; otherwise ``new``."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        merged = dict(old)
        for key, value in new.items():
            merged[key] = _merge_patch(old.get(key), value)
        return merged
    return new


def _extra_cells(check: Checker, raw: Any, grid: Mapping, variants: Mapping,
                 schema: BenchSchema) -> list[tuple[str, dict]]:
    """(label, overrides) of every cell of ``extra_cells`` (see :func:`build_study`), in file order."""
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not raw:
        check.fail("extra_cells", raw, "a non-empty list of blocks {around: ..., vary: {key: [values]}}")
    if not grid and not variants:
        raise ValueError(f"{check.path}: 'extra_cells' varies settings around a cell of the study's 'grid' or one "
                         "of its 'variants'; this study has neither (put the settings in a grid).")
    allowed = schema.overridable
    cells = []
    for index, block in enumerate(raw):
        key = f"extra_cells[{index}]"
        if not isinstance(block, Mapping):
            check.fail(key, block, "a mapping {around: ..., vary: {key: [values]}}")
        check.unknown_keys(block, set(EXTRA_CELL_KEYS), prefix=f"{key}.")
        if "around" not in block or "vary" not in block:
            missing = "around" if "around" not in block else "vary"
            raise ValueError(f"{check.path}: missing key '{key}.{missing}' ({EXTRA_CELLS_HELP}).")
        around = block["around"]
        if grid:
            if not isinstance(around, Mapping) or set(around) != set(grid):
                check.fail(f"{key}.around", around, "a cell of the grid: a mapping with one value of each grid key ("
                                                    + ", ".join(grid) + ")")
            for grid_key, value in around.items():
                if value not in list(grid[grid_key]):
                    check.fail(f"{key}.around.{grid_key}", value, "one of the grid's values "
                                                                  + ", ".join(map(repr, grid[grid_key])))
            coordinates = {grid_key: around[grid_key] for grid_key in grid}  # grid order
            base_overrides = dict(coordinates)
        else:
            if not isinstance(around, str) or around not in variants:
                check.fail(f"{key}.around", around, "the name of one of the study's variants: " + ", ".join(variants))
            coordinates = None
            base_overrides = dict(variants[around] or {})
        vary = block["vary"]
        if not isinstance(vary, Mapping) or not vary:
            check.fail(f"{key}.vary", vary, "a non-empty mapping key → list of values")
        for vary_key, values in vary.items():
            if vary_key in NOT_OVERRIDABLE or vary_key not in schema.keys:
                raise ValueError(f"{check.path}: unknown key '{key}.vary.{vary_key}'; allowed keys: "
                                 f"{', '.join(allowed)}.")
            if isinstance(values, str) or not isinstance(values, Sequence) or not values:
                check.fail(f"{key}.vary.{vary_key}", values, "a non-empty list of values")
            for value in values:
                overrides = dict(base_overrides)
                overrides[vary_key] = _merge_patch(base_overrides.get(vary_key), value)
                if coordinates is not None:
                    labels = [grid_label(k, overrides[k], schema.bench) for k in coordinates]
                    if vary_key not in coordinates:
                        labels.append(grid_label(vary_key, value, schema.bench))
                    label = ",".join(labels)
                else:
                    label = f"{around},{grid_label(vary_key, value, schema.bench)}"
                cells.append((label, overrides))
    return cells


def _positive_controls(check: Checker, raw: Any, schema: BenchSchema) -> list[tuple[str, dict]]:
    """(``control:<name>``, overrides) of every positive control (see :func:`build_study`), in file order."""
    if not isinstance(raw, Mapping) or not raw:
        check.fail("positive_controls", raw, "a non-empty mapping of control name → overrides of the study's keys "
                                             f"({POSITIVE_CONTROLS_HELP})")
    allowed = sorted(set(schema.overridable) - set(CONTROL_FIXED_KEYS))
    cells = []
    for name, overrides in raw.items():
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            check.fail("positive_controls", name, "control names that are non-empty strings without surrounding "
                                                  "spaces")
        if name.startswith(CONTROL_PREFIX):
            check.fail(f"positive_controls.{name}", name, f"a name without the '{CONTROL_PREFIX}' prefix (the cell "
                                                          f"is named '{CONTROL_PREFIX}<name>')")
        key = f"positive_controls.{name}"
        if not isinstance(overrides, Mapping) or not overrides:
            check.fail(key, overrides, "a non-empty mapping of the study's keys to the control's values "
                                       "(a control must change some setting)")
        for override_key in overrides:
            if override_key in CONTROL_FIXED_KEYS:
                raise ValueError(f"{check.path}: key '{key}.{override_key}' cannot be set in a positive control: a "
                                 "control is judged by the study's own outcome, on the study's methods and seeds; "
                                 f"allowed keys: {', '.join(allowed)}.")
            if override_key in NOT_OVERRIDABLE or override_key not in schema.keys:
                raise ValueError(f"{check.path}: unknown key '{key}.{override_key}'; allowed keys: "
                                 f"{', '.join(allowed)}.")
        cells.append((f"{CONTROL_PREFIX}{name}", dict(overrides)))
    return cells


def _cell_overrides(data: Mapping, path: str, check: Checker, schema: BenchSchema,
                    bench: str) -> tuple[list[tuple[str, Mapping]], int]:
    """A study's cells as (name, overrides of the base keys): the grid's combinations or the variants, then
    the extra cells; and how many of them the grid or the variants planned (the rest are extra cells)."""
    variants_raw = data.get("variants") or {}
    grid_raw = data.get("grid") or {}
    if not isinstance(variants_raw, Mapping):
        check.fail("variants", variants_raw, "a mapping of variant name → overrides")
    if not isinstance(grid_raw, Mapping):
        check.fail("grid", grid_raw, "a mapping of key → list of values")
    if variants_raw and grid_raw:
        raise ValueError(f"{path}: give 'variants' or 'grid', not both.")
    overrides: list[tuple[str, Mapping]] = []
    for key, values in grid_raw.items():
        if key in NOT_OVERRIDABLE or key not in schema.keys:
            raise ValueError(f"{path}: unknown key 'grid.{key}'; allowed keys: {', '.join(schema.overridable)}.")
        if isinstance(values, str) or not isinstance(values, Sequence) or not values:
            check.fail(f"grid.{key}", values, "a non-empty list of values")
    if grid_raw:
        keys = list(grid_raw)
        for combination in itertools.product(*(grid_raw[k] for k in keys)):
            label = ",".join(grid_label(k, v, bench) for k, v in zip(keys, combination))
            overrides.append((label, dict(zip(keys, combination))))
    for variant_name, value in variants_raw.items():
        if not isinstance(variant_name, str) or not variant_name:
            check.fail("variants", variant_name, "variant names that are non-empty strings")
        overrides.append((variant_name, value if value is not None else {}))
    planned = len(overrides)
    if data.get("extra_cells") is not None:
        overrides += _extra_cells(check, data["extra_cells"], grid_raw, variants_raw, schema)
    for variant_name, _ in overrides:
        if variant_name.startswith(CONTROL_PREFIX):
            raise ValueError(f"{path}: cell '{variant_name}': the prefix '{CONTROL_PREFIX}' marks positive controls; "
                             "declare a control under 'positive_controls' or rename the variant.")
    return overrides, planned


def _resolve_cells(overrides: list[tuple[str, Mapping]], planned: int, base: Mapping, path: str,
                   bench: str) -> list[tuple[str, RunConfig | SequenceRunConfig]]:
    """Each cell's resolved settings, in order; an extra cell (index ``planned`` on) must differ from every
    cell before it in name and settings."""
    variants: list[tuple[str, RunConfig | SequenceRunConfig]] = []
    for index, (variant_name, override) in enumerate(overrides):
        variant_check = Checker(path, f" (variant '{variant_name}')")
        config = resolve(variant_check, apply_overrides(variant_check, base, override, bench), bench)
        if index >= planned:  # an extra cell: new settings under a new name
            for other_name, other in variants:
                if other_name == variant_name or other == config:
                    what = "name" if other_name == variant_name else "settings"
                    raise ValueError(f"{path}: extra cell '{variant_name}' has the same {what} as the cell "
                                     f"'{other_name}'; every extra cell must change its around cell's settings "
                                     "and differ from every other cell.")
        variants.append((variant_name, config))
    return variants


def _resolve_controls(raw: Any, variants: list[tuple[str, RunConfig | SequenceRunConfig]], base: Mapping,
                      path: str, check: Checker, schema: BenchSchema, bench: str) -> list[str]:
    """Append each positive control's cell to ``variants`` (after every other cell); returns their names."""
    controls = []
    for control_name, override in _positive_controls(check, raw, schema):
        control_check = Checker(path, f" (positive control '{control_name}')")
        config = resolve(control_check, apply_overrides(control_check, base, override, bench), bench)
        if config.outcome.kind == "none":
            raise ValueError(f"{path}: positive control '{control_name}' needs the study to count an outcome "
                             "(its 'outcome' is none): a positive control shows that the outcome's event can "
                             "happen.")
        for other_name, other in variants:
            if other == config:
                raise ValueError(f"{path}: positive control '{control_name}' has the same settings as the cell "
                                 f"'{other_name}'; a control must change the settings of every other cell.")
        variants.append((control_name, config))
        controls.append(control_name)
    return controls


def build_study(data: Mapping, path: str, check: Checker, bench: str = "bernoulli") -> Study:
    """The cells of a study of ``bench`` (:data:`gdpo.sim.schema.BENCHES`), the same for both benches: a
    ``name``, then either named ``variants`` or a ``grid`` (every combination of the listed values) of overrides
    of the base keys, each variant checked by :func:`gdpo.sim.schema.apply_overrides` and
    :func:`gdpo.sim.schema.resolve`; without either, one variant ``default``. Grid variants are named
    :func:`gdpo.sim.schema.grid_label` ``(key, value)`` joined by commas, in grid order.

    ``extra_cells`` adds cells to a grid or to the variants without the cost of a larger product: a list of
    one-factor-at-a-time blocks ``{around: <cell>, vary: {key: [values]}}``. ``around`` is a cell of the grid
    (a mapping with one of the grid's values for every grid key) or, in a study with variants, a variant's
    name; each value under ``vary`` makes one more cell, the around cell with that one key changed (a patch
    such as ``base`` or ``rewards`` is applied on top of the around cell's own patch of that key). A cell of a
    grid is named by its grid coordinates (the varied one replaced when it is a grid key, else appended:
    ``learning_rate=0.1,max_length=24,prompts=32``); a cell of a variant ``<variant>,<key>=<value>``. The extra
    cells come after the grid's (or the variants) and are run and reported like them.

    ``positive_controls`` declares cells whose settings are engineered so that the study's outcome event
    happens, to show that the bench and the outcome's detector can see the event at all: a mapping
    ``{<name>: {key: value, ...}}`` of overrides of the study's keys, applied like a variant's (on the study's
    top-level settings, not on a grid cell). Each is one more cell named ``control:<name>``, after every other
    cell, run on the study's methods and seeds and judged by the study's outcome (a control cannot set
    ``outcome``, ``methods`` or ``seeds``, and the study must count an outcome); :attr:`Study.controls` lists
    them and the results mark their rows ``positive_control``. Ordinary variants cannot take the ``control:``
    prefix.

    Raises:
        ValueError: a bad key or value (named with the file); ``extra_cells`` in a study without a grid or
            variants, an ``around`` that is not a cell of the study, a key that cannot vary, or an extra cell
            that repeats another cell's name or settings (its around cell's, a grid cell's or another extra
            cell's); a positive control that is not a non-empty mapping of settable keys, in a study without an
            outcome, or with the settings of another cell.
    """
    schema = SCHEMAS[bench]
    check.unknown_keys(data, schema.keys)
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{path}: missing or empty key 'name' (the study name, a string).")
    base = {k: v for k, v in data.items() if k not in ("variants", "grid", "extra_cells", "positive_controls")}
    overrides, planned = _cell_overrides(data, path, check, schema, bench)
    if overrides:
        variants = _resolve_cells(overrides, planned, base, path, bench)
    else:
        variants = [("default", resolve(check, base, bench))]
    controls = []
    if data.get("positive_controls") is not None:
        controls = _resolve_controls(data["positive_controls"], variants, base, path, check, schema, bench)
    claims = tuple(str(c) for c in (data.get("claims") or []))
    return Study(name=name, description=str(data.get("description", "")), claims=claims, path=path,
                 variants=tuple(variants), controls=tuple(controls))


def parse_study(data: Any, path: str = "<study>") -> Study:
    """Validate a study mapping (as read from YAML); ``path`` is named in every error."""
    check = Checker(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: a study file must be a YAML mapping of keys ({', '.join(BERNOULLI.keys)}).")
    bench = data.get("bench", "bernoulli")
    if bench not in BENCHES:
        check.fail("bench", bench, " or ".join(BENCHES))
    return build_study(data, path, check, bench)


def read_study(path: str | Path) -> Study:
    """Read a study YAML file and check its keys and values (:func:`parse_study`), without building its reward
    models; :func:`gdpo.sim.study.load_study` checks more.

    Raises:
        ValueError: the file is missing, not YAML, or a key is unknown or out of range; the message names
            the key, the allowed values or range, and the file.
    """
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"study file {file} does not exist; the shipped studies are in config/sim/.")
    try:
        data = read_yaml(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ValueError(f"{file} is not valid YAML: {error}") from None
    return parse_study(data, str(file))
