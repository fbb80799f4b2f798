"""Study files of the policy-gradient bench: YAML → validated, frozen :class:`Study`.

A study is reward definitions + methods + seeds + steps + prompts + G + learning rate + options, and
optionally named *variants* (each a set of overrides of the study's keys) or a *grid* (the cartesian
product of a few keys' values, which generates the variants), optionally *extra cells* varied one factor
at a time around a cell of the grid or a variant (``extra_cells``, see :func:`build_study`), and optionally
*positive controls* (``positive_controls``: named cells whose settings are engineered so that the study's
outcome event does happen, run and reported like every cell but marked as controls). Every key is
checked; a bad one raises ``ValueError`` naming the key, what is allowed there and the file.

Override rules of a variant (and of a grid point): a top-level key replaces the study's value, except
``rewards`` given as a mapping ``{reward name: {field: value}}``, which patches the named rewards, and
``reward_template`` given as a mapping, which patches the template.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gdpo.config import read_yaml
from gdpo.methods import available_conventions, available_methods

RULES = ("all", "fraction")
SCALES = ("binary", "graded", "ranged")
OPTIMIZERS = ("adam", "sgd")
POLICIES = ("tabular", "shared", "mixed")
OUTCOMES = ("none", "failure_to_converge", "collapse")
#: Correlations the bench can be asked for between two rewards at step 0.
CORRELATION_RANGE = (-0.5, 0.95)
#: What ``extra_cells`` holds (both benches; see :func:`build_study`).
EXTRA_CELLS_HELP = ("list of one-factor-at-a-time blocks {around: a cell of the grid (one value of every grid key) "
                    "or a variant name, vary: mapping key → list of values}; each value is one more cell, the "
                    "around cell with that one key changed")
#: Prefix of a positive control's cell (variant) name: ``control:<name>``.
CONTROL_PREFIX = "control:"
#: Keys a positive control cannot set: it is judged by the study's own outcome, on its methods and seeds.
CONTROL_FIXED_KEYS = ("outcome", "methods", "seeds")
#: What ``positive_controls`` holds (both benches; see :func:`build_study`).
POSITIVE_CONTROLS_HELP = ("mapping control name → overrides of the study's keys (as a variant's), settings engineered "
                          "so that the study's outcome event happens; each is one more cell named "
                          f"'{CONTROL_PREFIX}<name>', marked positive_control in the results (it cannot set "
                          + ", ".join(CONTROL_FIXED_KEYS) + ")")

_REWARD_KEYS = {
    "name": "reward name (a column of the results)",
    "behaviours": "number of Bernoulli behaviours the reward depends on (integer ≥ 1, private to this reward)",
    "rule": f"how the behaviours make the graded value in [0, 1]: one of {', '.join(RULES)}",
    "scale": f"reward scale: one of {', '.join(SCALES)}",
    "range": "[low, high] of a ranged reward (the graded value is mapped affinely onto it)",
    "difficulty": "success probability (mean graded value) at step 0, in (0, 1)",
    "weight": "reward weight in the advantage (finite number, default 1)",
}
_TOP_KEYS = {
    "name": "study name",
    "bench": "bernoulli (this bench, the default) or sequence (gdpo.sim.sequence_config)",
    "description": "the question the study asks",
    "claims": "paper claim ids the study speaks to",
    "seeds": "number of seeds (seeds 0..N−1) or a list of distinct seeds ≥ 0",
    "steps": "optimizer steps per run (integer ≥ 1)",
    "prompts": "prompts per batch (integer ≥ 1)",
    "generations": "rollouts per prompt G (integer ≥ 2)",
    "methods": "advantage methods of the gdpo.advantages registry",
    "convention": "numeric convention of the gdpo.advantages registry",
    "optimizer": f"one of {', '.join(OPTIMIZERS)}",
    "learning_rate": "learning rate on the logits (> 0)",
    "clip_epsilon": "PPO clip range ε (> 0)",
    "inner_epochs": "optimizer steps on each sampled batch (integer ≥ 1)",
    "policy": f"logit parametrisation: one of {', '.join(POLICIES)}",
    "prompt_spread": "std (logits) of the per-prompt difficulty offset (≥ 0)",
    "rewards": "list of reward definitions",
    "reward_template": "one reward definition copied num_rewards times (used when rewards is absent)",
    "num_rewards": "number of copies of reward_template (integer 1..16)",
    "correlations": "list of {rewards: [a, b], value: ρ} step-0 correlations",
    "conditioning": "{easy: name or [names], hard: name, threshold: number} (Eq. 8)",
    "length_reward": "name of the reward whose violations make the response-length proxy, or null",
    "outcome": f"per-run outcome: {{kind: {' | '.join(OUTCOMES)}, ...}}",
    "exact_counts": "attach the exact analysis' distinct-advantage-group count (binary rewards only)",
    "variants": "mapping variant name → overrides of the keys above",
    "grid": "mapping key → list of values; every combination is a variant",
    "extra_cells": EXTRA_CELLS_HELP,
    "positive_controls": POSITIVE_CONTROLS_HELP,
}
_NOT_OVERRIDABLE = {"name", "bench", "description", "claims", "variants", "grid", "extra_cells", "positive_controls"}
_DEFAULTS: dict[str, Any] = {
    "description": "",
    "claims": [],
    "seeds": 32,
    "prompts": 64,
    "generations": 8,
    "convention": "trl",
    "optimizer": "adam",
    "clip_epsilon": 0.2,
    "inner_epochs": 1,
    "policy": "mixed",
    "prompt_spread": 0.0,
    "correlations": [],
    "conditioning": None,
    "length_reward": None,
    "outcome": None,
    "exact_counts": False,
}
_REQUIRED = ("name", "steps", "methods", "learning_rate")


@dataclasses.dataclass(frozen=True)
class RewardSpec:
    """One reward: its behaviours, rule, scale, step-0 difficulty and weight.

    The graded value ``v ∈ [0, 1]`` is ``all`` of the behaviours set (0/1) or the ``fraction`` set; a
    correlation coupling (see :mod:`gdpo.sim.rewards`) multiplies it by a shared 0/1 factor. The paid
    reward is ``v`` (binary, graded) or ``low + (high − low)·v`` (ranged, e.g. ToolRL's [−3, 3]).
    """

    name: str
    behaviours: int
    rule: str
    scale: str
    difficulty: float
    weight: float = 1.0
    low: float = 0.0
    high: float = 1.0


@dataclasses.dataclass(frozen=True)
class CorrelationSpec:
    """Requested Pearson correlation between two rewards at step 0 (pooled over prompts and rollouts)."""

    first: str
    second: str
    value: float


@dataclasses.dataclass(frozen=True)
class ConditioningSpec:
    """Eq. 8: the ``easy`` rewards are paid only where ``hard`` reaches ``threshold`` (raw units)."""

    easy: tuple[str, ...]
    hard: str
    threshold: float


@dataclasses.dataclass(frozen=True)
class OutcomeSpec:
    """A per-run (per-seed) event counted by :func:`gdpo.sim.summarise`.

    ``failure_to_converge``: the run fails if the final success (mean over the last 10 % of steps) of
    any reward in ``rewards`` is below ``threshold``. ``collapse``: ``detect_divergence`` fires on the
    success curve of ``reward`` against the length proxy (see :mod:`gdpo.sim.study`).
    """

    kind: str = "none"
    threshold: float = 0.5
    rewards: tuple[str, ...] = ()
    reward: str = ""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything one (variant, method) run of the bench needs; shapes follow from it.

    S = len(seeds), P = prompts, G = generations, n = len(rewards).
    """

    #: Which bench runs it (the sequence bench's configs say "sequence").
    bench = "bernoulli"

    seeds: tuple[int, ...]
    steps: int
    prompts: int
    generations: int
    methods: tuple[str, ...]
    convention: str
    optimizer: str
    learning_rate: float
    clip_epsilon: float
    inner_epochs: int
    policy: str
    prompt_spread: float
    rewards: tuple[RewardSpec, ...]
    correlations: tuple[CorrelationSpec, ...]
    conditioning: ConditioningSpec | None
    length_reward: str | None
    outcome: OutcomeSpec
    exact_counts: bool

    @property
    def reward_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rewards)

    def reward_index(self, name: str) -> int:
        return self.reward_names.index(name)


@dataclasses.dataclass(frozen=True)
class Study:
    """A validated study file. ``variants`` maps variant name → its resolved :class:`RunConfig`, in file
    order; a study without variants has the single variant ``"default"``. ``controls``: the names of the
    variants that are positive controls (``control:<name>``, after every other cell)."""

    name: str
    description: str
    claims: tuple[str, ...]
    path: str
    variants: tuple[tuple[str, RunConfig], ...]
    controls: tuple[str, ...] = ()

    def is_control(self, name: str) -> bool:
        """Whether the variant ``name`` is a positive control."""
        return name in self.controls

    def variant(self, name: str) -> RunConfig:
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


# --------------------------------------------------------------------------------------------------
# Validation helpers: each raises with key, allowed values and file
# --------------------------------------------------------------------------------------------------


class _Checker:
    def __init__(self, path: str, where: str = ""):
        self.path = path
        self.where = where  # e.g. " (variant 'w0.5')"

    def fail(self, key: str, value: Any, allowed: str) -> None:
        raise ValueError(f"{self.path}{self.where}: key '{key}' = {value!r} is not allowed; allowed: {allowed}.")

    def unknown_keys(self, mapping: Mapping, allowed: Mapping[str, str] | set, prefix: str = "") -> None:
        for key in mapping:
            if key not in allowed:
                names = ", ".join(sorted(allowed))
                raise ValueError(
                    f"{self.path}{self.where}: unknown key '{prefix}{key}'; allowed keys"
                    f"{' under ' + prefix.rstrip('.') if prefix else ''}: {names}."
                )

    def integer(self, key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum
        ):
            bound = f"an integer ≥ {minimum}" + (f" and ≤ {maximum}" if maximum is not None else "")
            self.fail(key, value, bound)
        return int(value)

    def number(self, key: str, value: Any, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if ok and low is not None:
            ok = value > low if low_open else value >= low
        if ok and high is not None:
            ok = value < high if high_open else value <= high
        if not ok:
            left = "(" if low_open else "["
            right = ")" if high_open else "]"
            lo = "−∞" if low is None else f"{low:g}"
            hi = "∞" if high is None else f"{high:g}"
            self.fail(key, value, f"a finite number in {left}{lo}, {hi}{right}")
        return float(value)

    def choice(self, key: str, value: Any, allowed: Sequence[str]) -> str:
        if value not in allowed:
            self.fail(key, value, ", ".join(allowed))
        return value


def _parse_reward(check: _Checker, raw: Any, key: str) -> RewardSpec:
    if not isinstance(raw, Mapping):
        check.fail(key, raw, "a mapping with keys " + ", ".join(_REWARD_KEYS))
    check.unknown_keys(raw, _REWARD_KEYS, prefix=f"{key}.")
    for required in ("name", "behaviours", "rule", "scale", "difficulty"):
        if required not in raw:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}.{required}' "
                             f"({_REWARD_KEYS[required]}).")
    name = raw["name"]
    if not isinstance(name, str) or not name:
        check.fail(f"{key}.name", name, "a non-empty string")
    behaviours = check.integer(f"{key}.behaviours", raw["behaviours"], 1, 64)
    rule = check.choice(f"{key}.rule", raw["rule"], RULES)
    scale = check.choice(f"{key}.scale", raw["scale"], SCALES)
    if scale == "binary" and rule != "all":
        check.fail(f"{key}.scale", scale, "graded or ranged for rule 'fraction' (a binary reward needs rule 'all')")
    difficulty = check.number(f"{key}.difficulty", raw["difficulty"], 0.0, 1.0, low_open=True, high_open=True)
    weight = check.number(f"{key}.weight", raw.get("weight", 1.0))
    low, high = 0.0, 1.0
    if scale == "ranged":
        bounds = raw.get("range")
        if (not isinstance(bounds, Sequence) or isinstance(bounds, str) or len(bounds) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b)
                           for b in bounds) or not bounds[0] < bounds[1]):
            check.fail(f"{key}.range", bounds, "[low, high] with finite low < high (required for scale 'ranged')")
        low, high = float(bounds[0]), float(bounds[1])
    elif "range" in raw:
        check.fail(f"{key}.range", raw["range"], "only with scale 'ranged'")
    return RewardSpec(name, behaviours, rule, scale, difficulty, weight, low, high)


def _rewards_from_template(check: _Checker, data: Mapping) -> list:
    template = data.get("reward_template")
    count = data.get("num_rewards")
    if template is None or count is None:
        raise ValueError(f"{check.path}{check.where}: give 'rewards' (a list), or both 'reward_template' "
                         "and 'num_rewards'.")
    count = check.integer("num_rewards", count, 1, 16)
    if not isinstance(template, Mapping):
        check.fail("reward_template", template, "a reward definition mapping")
    rewards = []
    for index in range(count):
        reward = dict(template)
        reward["name"] = f"{template.get('name', 'r')}{index + 1}"
        rewards.append(reward)
    return rewards


def _resolve(check: _Checker, data: Mapping) -> RunConfig:
    check.unknown_keys(data, _TOP_KEYS)
    for key in _REQUIRED:
        if key not in data:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}' ({_TOP_KEYS[key]}).")
    merged = {**_DEFAULTS, **data}

    seeds_raw = merged["seeds"]
    if isinstance(seeds_raw, int) and not isinstance(seeds_raw, bool):
        seeds = tuple(range(check.integer("seeds", seeds_raw, 1, 100_000)))
    elif isinstance(seeds_raw, Sequence) and not isinstance(seeds_raw, str) and seeds_raw:
        seeds = tuple(check.integer(f"seeds[{i}]", s, 0, 2**31 - 1) for i, s in enumerate(seeds_raw))
        if len(set(seeds)) != len(seeds):
            check.fail("seeds", seeds_raw, "distinct seeds")
    else:
        check.fail("seeds", seeds_raw, "an integer ≥ 1 or a non-empty list of distinct integers ≥ 0")

    methods_raw = merged["methods"]
    if isinstance(methods_raw, str) or not isinstance(methods_raw, Sequence) or not methods_raw:
        check.fail("methods", methods_raw, "a non-empty list of " + ", ".join(available_methods()))
    methods = tuple(check.choice(f"methods[{i}]", m, available_methods()) for i, m in enumerate(methods_raw))
    if len(set(methods)) != len(methods):
        check.fail("methods", methods_raw, "distinct methods")

    if "rewards" in merged:
        if "reward_template" in merged or "num_rewards" in merged:
            raise ValueError(f"{check.path}{check.where}: give either 'rewards' or 'reward_template' + "
                             "'num_rewards', not both.")
        rewards_raw = merged["rewards"]
    else:
        rewards_raw = _rewards_from_template(check, merged)
    if isinstance(rewards_raw, str) or not isinstance(rewards_raw, Sequence) or not rewards_raw:
        check.fail("rewards", rewards_raw, "a non-empty list of reward definitions")
    rewards = tuple(_parse_reward(check, r, f"rewards[{i}]") for i, r in enumerate(rewards_raw))
    names = [r.name for r in rewards]
    if len(set(names)) != len(names):
        check.fail("rewards", names, "distinct reward names")

    def reward_name(key: str, value: Any) -> str:
        if value not in names:
            check.fail(key, value, "a reward name: " + ", ".join(names))
        return value

    correlations = []
    correlated: set[str] = set()
    correlations_raw = merged["correlations"] or []
    if not isinstance(correlations_raw, Sequence) or isinstance(correlations_raw, str):
        check.fail("correlations", correlations_raw, "a list of {rewards: [a, b], value: ρ}")
    for i, item in enumerate(correlations_raw):
        key = f"correlations[{i}]"
        if not isinstance(item, Mapping):
            check.fail(key, item, "a mapping {rewards: [a, b], value: ρ}")
        check.unknown_keys(item, {"rewards", "value"}, prefix=f"{key}.")
        pair = item.get("rewards")
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2 or pair[0] == pair[1]:
            check.fail(f"{key}.rewards", pair, "two different reward names")
        first, second = (reward_name(f"{key}.rewards", p) for p in pair)
        if {first, second} & correlated:
            check.fail(f"{key}.rewards", list(pair), "rewards that are in no other correlation pair")
        correlated |= {first, second}
        value = check.number(f"{key}.value", item.get("value"), *CORRELATION_RANGE)
        correlations.append(CorrelationSpec(first, second, value))

    conditioning = None
    if merged["conditioning"] is not None:
        raw = merged["conditioning"]
        if not isinstance(raw, Mapping):
            check.fail("conditioning", raw, "a mapping {easy, hard, threshold} or null")
        check.unknown_keys(raw, {"easy", "hard", "threshold"}, prefix="conditioning.")
        easy_raw = raw.get("easy")
        easy_list = [easy_raw] if isinstance(easy_raw, str) else list(easy_raw or [])
        if not easy_list:
            check.fail("conditioning.easy", easy_raw, "a reward name or a list of reward names")
        easy = tuple(reward_name("conditioning.easy", e) for e in easy_list)
        hard = reward_name("conditioning.hard", raw.get("hard"))
        if hard in easy:
            check.fail("conditioning.hard", hard, "a reward that is not also an easy (conditioned) reward")
        hard_spec = rewards[names.index(hard)]
        threshold = check.number("conditioning.threshold", raw.get("threshold", hard_spec.high))
        conditioning = ConditioningSpec(easy, hard, threshold)

    length_reward = merged["length_reward"]
    if length_reward is not None:
        reward_name("length_reward", length_reward)

    outcome_raw = merged["outcome"]
    if outcome_raw is None:
        outcome = OutcomeSpec()
    else:
        if not isinstance(outcome_raw, Mapping):
            check.fail("outcome", outcome_raw, "a mapping {kind, ...} or null")
        check.unknown_keys(outcome_raw, {"kind", "threshold", "rewards", "reward"}, prefix="outcome.")
        kind = check.choice("outcome.kind", outcome_raw.get("kind"), OUTCOMES)
        threshold = check.number("outcome.threshold", outcome_raw.get("threshold", 0.5), 0.0, 1.0)
        outcome_rewards = outcome_raw.get("rewards", names)
        if isinstance(outcome_rewards, str):
            outcome_rewards = [outcome_rewards]
        outcome_rewards = tuple(reward_name("outcome.rewards", r) for r in outcome_rewards)
        reward = ""
        if kind == "collapse":
            reward = reward_name("outcome.reward", outcome_raw.get("reward"))
            if length_reward is None:
                check.fail("length_reward", None, "a reward name (the collapse outcome needs a length proxy)")
        outcome = OutcomeSpec(kind, threshold, outcome_rewards, reward)

    exact_counts = merged["exact_counts"]
    if not isinstance(exact_counts, bool):
        check.fail("exact_counts", exact_counts, "true or false")
    if exact_counts and any(r.scale != "binary" for r in rewards):
        check.fail("exact_counts", True, "false unless every reward is binary (the exact analysis enumerates "
                                         "binary rewards)")

    if not isinstance(merged["claims"], Sequence) or isinstance(merged["claims"], str):
        check.fail("claims", merged["claims"], "a list of claim ids such as [C3, C4]")
    if not isinstance(merged["description"], str):
        check.fail("description", merged["description"], "a string")

    return RunConfig(
        seeds=seeds,
        steps=check.integer("steps", merged["steps"], 1, 1_000_000),
        prompts=check.integer("prompts", merged["prompts"], 1, 1_000_000),
        generations=check.integer("generations", merged["generations"], 2, 4096),
        methods=methods,
        convention=check.choice("convention", merged["convention"], available_conventions()),
        optimizer=check.choice("optimizer", merged["optimizer"], OPTIMIZERS),
        learning_rate=check.number("learning_rate", merged["learning_rate"], 0.0, None, low_open=True),
        clip_epsilon=check.number("clip_epsilon", merged["clip_epsilon"], 0.0, None, low_open=True),
        inner_epochs=check.integer("inner_epochs", merged["inner_epochs"], 1, 1000),
        policy=check.choice("policy", merged["policy"], POLICIES),
        prompt_spread=check.number("prompt_spread", merged["prompt_spread"], 0.0, 10.0),
        rewards=rewards,
        correlations=tuple(correlations),
        conditioning=conditioning,
        length_reward=length_reward,
        outcome=outcome,
        exact_counts=exact_counts,
    )


def _apply_overrides(check: _Checker, base: Mapping, overrides: Any) -> dict:
    if not isinstance(overrides, Mapping):
        check.fail("(variant)", overrides, "a mapping of keys to override")
    for key in overrides:
        if key in _NOT_OVERRIDABLE or key not in _TOP_KEYS:
            allowed = sorted(set(_TOP_KEYS) - _NOT_OVERRIDABLE)
            raise ValueError(f"{check.path}{check.where}: key '{key}' cannot be set in a variant; "
                             f"allowed keys: {', '.join(allowed)}.")
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if key == "rewards" and isinstance(value, Mapping):
            current = merged.get("rewards")
            if not isinstance(current, list):
                check.fail("rewards", value, "a patch only where the study lists its rewards")
            by_name = {r.get("name"): r for r in current if isinstance(r, Mapping)}
            for name, patch in value.items():
                if name not in by_name:
                    existing = ", ".join(map(str, by_name))
                    check.fail(f"rewards.{name}", patch, f"a patch of an existing reward: {existing}")
                if not isinstance(patch, Mapping):
                    check.fail(f"rewards.{name}", patch, "a mapping of reward fields")
                by_name[name].update(copy.deepcopy(dict(patch)))
        elif key == "reward_template" and isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key].update(copy.deepcopy(dict(value)))
        else:
            merged[key] = copy.deepcopy(value)
        if key in ("reward_template", "num_rewards") and "rewards" in merged and "rewards" not in overrides:
            check.fail(key, value, "only in a study that defines its rewards by reward_template")
    return merged


def _format_grid_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _plain_grid_label(key: str, value: Any) -> str:
    return f"{key}={_format_grid_value(value)}"


def _merge_patch(old: Any, new: Any) -> Any:
    """``new`` on top of ``old`` where both are mappings (patches such as ``base`` or ``rewards``), key by key and
    recursively; otherwise ``new``."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        merged = dict(old)
        for key, value in new.items():
            merged[key] = _merge_patch(old.get(key), value)
        return merged
    return new


def _extra_cells(check: _Checker, raw: Any, grid: Mapping, variants: Mapping, top_keys, not_overridable,
                 grid_label: Callable[[str, Any], str]) -> list[tuple[str, dict]]:
    """(label, overrides) of every cell of ``extra_cells`` (see :func:`build_study`), in file order."""
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not raw:
        check.fail("extra_cells", raw, "a non-empty list of blocks {around: ..., vary: {key: [values]}}")
    if not grid and not variants:
        raise ValueError(f"{check.path}: 'extra_cells' varies settings around a cell of the study's 'grid' or one "
                         "of its 'variants'; this study has neither (put the settings in a grid).")
    allowed = sorted(set(top_keys) - not_overridable)
    cells = []
    for index, block in enumerate(raw):
        key = f"extra_cells[{index}]"
        if not isinstance(block, Mapping):
            check.fail(key, block, "a mapping {around: ..., vary: {key: [values]}}")
        check.unknown_keys(block, {"around", "vary"}, prefix=f"{key}.")
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
            if vary_key in not_overridable or vary_key not in top_keys:
                raise ValueError(f"{check.path}: unknown key '{key}.vary.{vary_key}'; allowed keys: "
                                 f"{', '.join(allowed)}.")
            if isinstance(values, str) or not isinstance(values, Sequence) or not values:
                check.fail(f"{key}.vary.{vary_key}", values, "a non-empty list of values")
            for value in values:
                overrides = dict(base_overrides)
                overrides[vary_key] = _merge_patch(base_overrides.get(vary_key), value)
                if coordinates is not None:
                    labels = [grid_label(k, overrides[k]) for k in coordinates]
                    if vary_key not in coordinates:
                        labels.append(grid_label(vary_key, value))
                    label = ",".join(labels)
                else:
                    label = f"{around},{grid_label(vary_key, value)}"
                cells.append((label, overrides))
    return cells


def _positive_controls(check: _Checker, raw: Any, top_keys, not_overridable) -> list[tuple[str, dict]]:
    """(``control:<name>``, overrides) of every positive control (see :func:`build_study`), in file order."""
    if not isinstance(raw, Mapping) or not raw:
        check.fail("positive_controls", raw, "a non-empty mapping of control name → overrides of the study's keys "
                                             f"({POSITIVE_CONTROLS_HELP})")
    allowed = sorted(set(top_keys) - set(not_overridable) - set(CONTROL_FIXED_KEYS))
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
            if override_key in not_overridable or override_key not in top_keys:
                raise ValueError(f"{check.path}: unknown key '{key}.{override_key}'; allowed keys: "
                                 f"{', '.join(allowed)}.")
        cells.append((f"{CONTROL_PREFIX}{name}", dict(overrides)))
    return cells


def build_study(data: Mapping, path: str, check: _Checker, *, top_keys, not_overridable, resolve: Callable,
                apply_overrides: Callable, grid_label: Callable[[str, Any], str]) -> Study:
    """What every bench's study file shares: a ``name``, then either named ``variants`` or a ``grid`` (every
    combination of the listed values) of overrides of the base keys, each variant checked by the bench's
    ``apply_overrides`` and ``resolve``; without either, one variant ``default``. Grid variants are named
    ``grid_label(key, value)`` joined by commas, in grid order.

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
    check.unknown_keys(data, top_keys)
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{path}: missing or empty key 'name' (the study name, a string).")
    base = {k: v for k, v in data.items() if k not in ("variants", "grid", "extra_cells", "positive_controls")}
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
        if key in not_overridable or key not in top_keys:
            allowed = sorted(set(top_keys) - not_overridable)
            raise ValueError(f"{path}: unknown key 'grid.{key}'; allowed keys: {', '.join(allowed)}.")
        if isinstance(values, str) or not isinstance(values, Sequence) or not values:
            check.fail(f"grid.{key}", values, "a non-empty list of values")
    if grid_raw:
        keys = list(grid_raw)
        for combination in itertools.product(*(grid_raw[k] for k in keys)):
            label = ",".join(grid_label(k, v) for k, v in zip(keys, combination))
            overrides.append((label, dict(zip(keys, combination))))
    for variant_name, value in variants_raw.items():
        if not isinstance(variant_name, str) or not variant_name:
            check.fail("variants", variant_name, "variant names that are non-empty strings")
        overrides.append((variant_name, value if value is not None else {}))
    planned = len(overrides)
    if data.get("extra_cells") is not None:
        overrides += _extra_cells(check, data["extra_cells"], grid_raw, variants_raw, top_keys, not_overridable,
                                  grid_label)
    for variant_name, _ in overrides:
        if variant_name.startswith(CONTROL_PREFIX):
            raise ValueError(f"{path}: cell '{variant_name}': the prefix '{CONTROL_PREFIX}' marks positive controls; "
                             "declare a control under 'positive_controls' or rename the variant.")
    if overrides:
        variants = []
        for index, (variant_name, override) in enumerate(overrides):
            variant_check = _Checker(path, f" (variant '{variant_name}')")
            config = resolve(variant_check, apply_overrides(variant_check, base, override))
            if index >= planned:  # an extra cell: new settings under a new name
                for other_name, other in variants:
                    if other_name == variant_name or other == config:
                        what = "name" if other_name == variant_name else "settings"
                        raise ValueError(f"{path}: extra cell '{variant_name}' has the same {what} as the cell "
                                         f"'{other_name}'; every extra cell must change its around cell's settings "
                                         "and differ from every other cell.")
            variants.append((variant_name, config))
    else:
        variants = [("default", resolve(check, base))]
    controls = []
    if data.get("positive_controls") is not None:
        for control_name, override in _positive_controls(check, data["positive_controls"], top_keys, not_overridable):
            control_check = _Checker(path, f" (positive control '{control_name}')")
            config = resolve(control_check, apply_overrides(control_check, base, override))
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
    claims = tuple(str(c) for c in (data.get("claims") or []))
    return Study(name=name, description=str(data.get("description", "")), claims=claims, path=path,
                 variants=tuple(variants), controls=tuple(controls))


def parse_study(data: Any, path: str = "<study>") -> Study:
    """Validate a study mapping (as read from YAML); ``path`` is named in every error."""
    check = _Checker(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: a study file must be a YAML mapping of keys ({', '.join(_TOP_KEYS)}).")
    bench = data.get("bench", "bernoulli")
    if bench == "sequence":
        from gdpo.sim.sequence_config import parse_sequence_study

        return parse_sequence_study(data, path)
    if bench != "bernoulli":
        check.fail("bench", bench, "bernoulli or sequence")
    return build_study(data, path, check, top_keys=_TOP_KEYS, not_overridable=_NOT_OVERRIDABLE, resolve=_resolve,
                       apply_overrides=_apply_overrides, grid_label=_plain_grid_label)


def read_study(path: str | Path) -> Study:
    """Read a study YAML file and check its keys and values (:func:`parse_study`), without building its reward
    models: no torch, so a workflow checks its studies when it is planned. :func:`load_study` checks more.

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


def load_study(path: str | Path) -> Study:
    """Read and validate a study YAML file (:func:`read_study`), then build each Bernoulli cell's reward model.

    Its cells are the grid's (every combination of ``grid``'s values) or the named ``variants``, then the
    ``extra_cells``: blocks ``{around: <a grid cell or a variant name>, vary: {key: [values]}}``, each value one
    more cell, the around cell with that one key changed (one factor at a time; :func:`build_study`). A study
    fixes its cells before any result of them is seen and reports every one. Last come the
    ``positive_controls``: cells named ``control:<name>`` whose settings are engineered so that the outcome's
    event happens (:attr:`Study.controls`).

    Raises:
        ValueError: the file is missing, not YAML, or a key is unknown or out of range; the message names
            the key, the allowed values or range, and the file. Reward difficulties and correlations that
            cannot be met together are refused here too (the reward model is built for every variant).
    """
    file = Path(path)
    study = read_study(file)
    if any(config.bench != "bernoulli" for _, config in study.variants):
        return study
    # Calibration can fail (e.g. a correlation the two difficulties do not allow): refuse now, not mid-run.
    from gdpo.sim.rewards import build_reward_model

    for variant_name, config in study.variants:
        try:
            build_reward_model(config)
        except ValueError as error:
            raise ValueError(f"{file} (variant '{variant_name}'): {error}") from None
    return study
