"""The study schema of the policy-gradient bench, both benches in one place.

A study file's top-level keys are :data:`BERNOULLI.keys` (``bench: bernoulli``, the default: the Bernoulli
bench of :mod:`gdpo.sim.engine`, rewards from :mod:`gdpo.sim.rewards`) or :data:`SEQUENCE.keys`
(``bench: sequence``: the token policy of :mod:`gdpo.sim.sequence`, rewards read from the sampled sequence by
:mod:`gdpo.sim.sequence_rewards`). This module says what every key means, its default and its check, and
turns the keys of one cell of a study into the frozen settings its runs read: :func:`resolve` (one function
for both benches: the keys they share are checked once, each bench's own keys by its part) gives a
:class:`RunConfig` or a :class:`SequenceRunConfig`. :func:`apply_overrides` applies a variant's (or grid
point's) overrides to the study's keys and :func:`grid_label` names a grid coordinate.

How a file's cells are made (``variants``, ``grid``, ``extra_cells``, ``positive_controls``) and how a file is
read is :mod:`gdpo.sim.config`; every key is checked, and a bad one raises ``ValueError`` naming the key, what
is allowed there and the file.

Override rules of a variant (and of a grid point): a top-level key replaces the study's value, except
``rewards`` given as a mapping ``{reward name: {field: value}}``, which patches the named rewards, and (Bernoulli)
``reward_template`` or (sequence) ``base`` given as a mapping, which patches the template or the base policy.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gdpo.methods import available_conventions, available_methods

BENCHES = ("bernoulli", "sequence")
OPTIMIZERS = ("adam", "sgd")

# Bernoulli bench
RULES = ("all", "fraction")
SCALES = ("binary", "graded", "ranged")
POLICIES = ("tabular", "shared", "mixed")
OUTCOMES = ("none", "failure_to_converge", "collapse")
#: Correlations the bench can be asked for between two rewards at step 0.
CORRELATION_RANGE = (-0.5, 0.95)

# Sequence bench (reward kinds and the token layout: :mod:`gdpo.sim.sequence_rewards`)
REWARD_KINDS = ("correctness", "format", "length", "no_bug")
CORRECTNESS_SCALES = ("binary", "fraction", "ranged")
LOSS_TYPES = ("token_mean", "sequence_mean")
#: Outcomes a sequence study can count per seed (see :mod:`gdpo.sim.study`).
SEQUENCE_OUTCOMES = ("none", "fails_to_converge", "collapse")

#: What ``extra_cells`` holds (both benches; see :func:`gdpo.sim.config.build_study`).
EXTRA_CELLS_HELP = ("list of one-factor-at-a-time blocks {around: a cell of the grid (one value of every grid key) "
                    "or a variant name, vary: mapping key → list of values}; each value is one more cell, the "
                    "around cell with that one key changed")
#: Prefix of a positive control's cell (variant) name: ``control:<name>``.
CONTROL_PREFIX = "control:"
#: Keys a positive control cannot set: it is judged by the study's own outcome, on its methods and seeds.
CONTROL_FIXED_KEYS = ("outcome", "methods", "seeds")
#: What ``positive_controls`` holds (both benches; see :func:`gdpo.sim.config.build_study`).
POSITIVE_CONTROLS_HELP = ("mapping control name → overrides of the study's keys (as a variant's), settings engineered "
                          "so that the study's outcome event happens; each is one more cell named "
                          f"'{CONTROL_PREFIX}<name>', marked positive_control in the results (it cannot set "
                          + ", ".join(CONTROL_FIXED_KEYS) + ")")
#: Keys that name or structure a study; no variant, grid point, extra cell or control can set them.
NOT_OVERRIDABLE = frozenset({"name", "bench", "description", "claims", "variants", "grid", "extra_cells",
                             "positive_controls"})

#: Keys of one reward definition (an item of ``rewards``) on the Bernoulli bench.
BERNOULLI_REWARD_KEYS = {
    "name": "reward name (a column of the results)",
    "behaviours": "number of Bernoulli behaviours the reward depends on (integer ≥ 1, private to this reward)",
    "rule": f"how the behaviours make the graded value in [0, 1]: one of {', '.join(RULES)}",
    "scale": f"reward scale: one of {', '.join(SCALES)}",
    "range": "[low, high] of a ranged reward (the graded value is mapped affinely onto it)",
    "difficulty": "success probability (mean graded value) at step 0, in (0, 1)",
    "weight": "reward weight in the advantage (finite number, default 1)",
}
#: Keys of one reward definition (an item of ``rewards``) on the sequence bench.
SEQUENCE_REWARD_KEYS = {
    "name": "reward name (a column of the results)",
    "kind": f"what the reward reads from the sequence: one of {', '.join(REWARD_KINDS)}",
    "scale": f"correctness only: one of {', '.join(CORRECTNESS_SCALES)} (binary = exact answer; fraction = share "
             "of answer slots right, in [0, 1]; ranged = the fraction mapped onto `range`)",
    "range": "[low, high] of a ranged correctness reward, e.g. ToolRL's [-3, 3]",
    "limit": "length only: the reward is 1 iff the response has at most this many tokens (integer ≥ 1)",
    "weight": "reward weight in the advantage (finite number, default 1)",
}
#: Keys of the sequence bench's ``base`` (the step-0 policy).
BASE_KEYS = {
    "think_continue": "step-0 probability that a reasoning token is followed by another one, in [0, 1)",
    "off_template": "step-0 probability mass spread over all tokens in every state, in [0, 1) (format noise)",
    "answer_skill": "step-0 logit bonus of the right answer token(s), mean over prompts",
    "prompt_spread": "std over prompts of that bonus (logits, ≥ 0): per-prompt difficulty",
}
_BASE_DEFAULTS = {"think_continue": 0.6, "off_template": 0.05, "answer_skill": 0.0, "prompt_spread": 1.0}
#: Keys of ``conditioning`` (both benches; Eq. 8).
CONDITIONING_KEYS = ("easy", "hard", "threshold")
#: Keys of one item of the Bernoulli bench's ``correlations``.
CORRELATION_KEYS = ("rewards", "value")
#: Keys of ``outcome`` on the Bernoulli bench and on the sequence bench.
BERNOULLI_OUTCOME_KEYS = ("kind", "threshold", "rewards", "reward")
SEQUENCE_OUTCOME_KEYS = ("kind", "reward")
#: Keys of one block of ``extra_cells`` (both benches).
EXTRA_CELL_KEYS = ("around", "vary")

#: Keys both benches read, with what they mean (a bench may say more of ``bench`` and ``seeds``).
_SHARED_KEYS = {
    "name": "study name",
    "description": "the question the study asks",
    "claims": "paper claim ids the study speaks to",
    "seeds": "number of seeds (seeds 0..N−1)",
    "steps": "optimizer steps per run (integer ≥ 1)",
    "prompts": "prompts per batch (integer ≥ 1)",
    "generations": "rollouts per prompt G (integer ≥ 2)",
    "methods": "advantage methods of the gdpo.advantages registry",
    "convention": "numeric convention of the gdpo.advantages registry",
    "optimizer": f"one of {', '.join(OPTIMIZERS)}",
    "learning_rate": "learning rate on the logits (> 0)",
    "clip_epsilon": "PPO clip range ε (> 0)",
    "inner_epochs": "optimizer steps on each sampled batch (integer ≥ 1)",
    "rewards": "list of reward definitions",
    "conditioning": "{easy: name or [names], hard: name, threshold: number} (Eq. 8)",
}
_CELL_KEYS = {
    "variants": "mapping variant name → overrides of the keys above",
    "grid": "mapping key → list of values; every combination is a variant (fixed before results are seen)",
    "extra_cells": EXTRA_CELLS_HELP,
    "positive_controls": POSITIVE_CONTROLS_HELP,
}
_SHARED_DEFAULTS: dict[str, Any] = {
    "description": "",
    "claims": [],
    "seeds": 32,
    "generations": 8,
    "convention": "trl",
    "optimizer": "adam",
    "clip_epsilon": 0.2,
    "inner_epochs": 1,
    "conditioning": None,
    "outcome": None,
}
_SHARED_REQUIRED = ("name", "steps", "methods", "learning_rate")


@dataclasses.dataclass(frozen=True)
class BenchSchema:
    """The keys of one bench's study files.

    Attributes:
        bench: the ``bench`` value (:data:`BENCHES`).
        keys: top-level key → what it holds, in the order the file documents them.
        defaults: the value of each optional key a study leaves out.
        required: keys every study (after its variant's overrides) must give.
        maxima: upper bounds of ``prompts``, ``generations`` and ``inner_epochs``.
        seed_lists: whether ``seeds`` may also be a list of seeds (not only a count).
        patches: top-level keys whose mapping value in an override patches the study's mapping key by key
            (``rewards`` given as a mapping patches named rewards on both benches).
        sub_keys: top-level key → the keys its value holds (of each item, for the lists ``rewards``,
            ``correlations`` and ``extra_cells``).
    """

    bench: str
    keys: Mapping[str, str]
    defaults: Mapping[str, Any]
    required: tuple[str, ...]
    maxima: Mapping[str, int]
    seed_lists: bool
    patches: tuple[str, ...]
    sub_keys: Mapping[str, Sequence[str]]

    @property
    def overridable(self) -> list[str]:
        """The keys a variant, grid point, extra cell or control may set, sorted."""
        return sorted(set(self.keys) - NOT_OVERRIDABLE)


BERNOULLI = BenchSchema(
    bench="bernoulli",
    keys={
        "name": _SHARED_KEYS["name"],
        "bench": "bernoulli (this bench, the default) or sequence (the sequence bench)",
        "description": _SHARED_KEYS["description"],
        "claims": _SHARED_KEYS["claims"],
        "seeds": "number of seeds (seeds 0..N−1) or a list of distinct seeds ≥ 0",
        **{key: _SHARED_KEYS[key] for key in ("steps", "prompts", "generations", "methods", "convention",
                                                "optimizer", "learning_rate", "clip_epsilon", "inner_epochs")},
        "policy": f"logit parametrisation: one of {', '.join(POLICIES)}",
        "prompt_spread": "std (logits) of the per-prompt difficulty offset (≥ 0)",
        "rewards": _SHARED_KEYS["rewards"],
        "reward_template": "one reward definition copied num_rewards times (used when rewards is absent)",
        "num_rewards": "number of copies of reward_template (integer 1..16)",
        "correlations": "list of {rewards: [a, b], value: ρ} step-0 correlations",
        "conditioning": _SHARED_KEYS["conditioning"],
        "length_reward": "name of the reward whose violations make the response-length proxy, or null",
        "outcome": f"per-run outcome: {{kind: {' | '.join(OUTCOMES)}, ...}}",
        "exact_counts": "attach the exact analysis' distinct-advantage-group count (binary rewards only)",
        **_CELL_KEYS,
    },
    defaults={
        **_SHARED_DEFAULTS,
        "prompts": 64,
        "policy": "mixed",
        "prompt_spread": 0.0,
        "correlations": [],
        "length_reward": None,
        "exact_counts": False,
    },
    required=_SHARED_REQUIRED,
    maxima={"prompts": 1_000_000, "generations": 4096, "inner_epochs": 1000},
    seed_lists=True,
    patches=("reward_template",),
    sub_keys={"rewards": tuple(BERNOULLI_REWARD_KEYS), "correlations": CORRELATION_KEYS,
              "conditioning": CONDITIONING_KEYS, "outcome": BERNOULLI_OUTCOME_KEYS, "extra_cells": EXTRA_CELL_KEYS},
)

SEQUENCE = BenchSchema(
    bench="sequence",
    keys={
        "name": _SHARED_KEYS["name"],
        "bench": "sequence (this file's bench)",
        **{key: _SHARED_KEYS[key] for key in ("description", "claims", "seeds", "steps", "prompts", "generations",
                                                "methods", "convention", "optimizer", "learning_rate",
                                                "clip_epsilon", "inner_epochs")},
        "loss": f"loss aggregation: one of {', '.join(LOSS_TYPES)} (verl's token-mean; TRL's per-sequence mean)",
        "max_length": "response cap in tokens (integer 4..128): a response without the end token is truncated there",
        "answer_slots": "tokens in a right answer (1 = a math answer; 2 = a tool name and an argument)",
        "answer_choices": "candidate tokens per answer slot (integer 2..16)",
        "reasoning_needed": "[low, high]: reasoning tokens a prompt needs before its answer is right, spread "
                            "evenly over prompts (integers ≥ 0)",
        "base": "the step-0 policy: " + "; ".join(f"{k}: {v}" for k, v in BASE_KEYS.items()),
        "rewards": _SHARED_KEYS["rewards"],
        "conditioning": _SHARED_KEYS["conditioning"],
        "outcome": f"per-seed outcome: {{kind: {' | '.join(SEQUENCE_OUTCOMES)}, reward: name}}",
        **_CELL_KEYS,
    },
    defaults={
        **_SHARED_DEFAULTS,
        "prompts": 16,
        "loss": "token_mean",
        "max_length": 24,
        "answer_slots": 1,
        "answer_choices": 4,
        "reasoning_needed": [0, 0],
        "base": {},
    },
    required=(*_SHARED_REQUIRED, "rewards"),
    maxima={"prompts": 4096, "generations": 1024, "inner_epochs": 100},
    seed_lists=False,
    patches=("base",),
    sub_keys={"base": tuple(BASE_KEYS), "rewards": tuple(SEQUENCE_REWARD_KEYS), "conditioning": CONDITIONING_KEYS,
              "outcome": SEQUENCE_OUTCOME_KEYS, "extra_cells": EXTRA_CELL_KEYS},
)

#: ``bench`` value → its schema.
SCHEMAS = {schema.bench: schema for schema in (BERNOULLI, SEQUENCE)}


# --------------------------------------------------------------------------------------------------
# What one cell resolves to
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RewardSpec:
    """One reward of the Bernoulli bench: its behaviours, rule, scale, step-0 difficulty and weight.

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
    """A per-run (per-seed) event of the Bernoulli bench, counted by :func:`gdpo.sim.summarise`.

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
    """Everything one (variant, method) run of the Bernoulli bench needs; shapes follow from it.

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
class SequenceRewardSpec:
    """One reward read from the sequence. ``low``/``high``: the paid range of the graded value in [0, 1]."""

    name: str
    kind: str
    scale: str = "binary"
    weight: float = 1.0
    low: float = 0.0
    high: float = 1.0
    limit: int = 0


@dataclasses.dataclass(frozen=True)
class BasePolicy:
    """Step-0 habits of the policy (the "base model"); see :func:`gdpo.sim.sequence_rewards.base_logits`."""

    think_continue: float
    off_template: float
    answer_skill: float
    prompt_spread: float


@dataclasses.dataclass(frozen=True)
class SequenceOutcome:
    """Per-seed event: ``fails_to_converge`` (:func:`gdpo.curve_events.fails_to_converge` on ``reward``'s
    success curve) or ``collapse`` (:func:`gdpo.curve_events.detect_divergence` on ``reward``'s success
    curve against the batch's maximum response length)."""

    kind: str = "none"
    reward: str = ""


@dataclasses.dataclass(frozen=True)
class SequenceRunConfig:
    """Everything one (variant, method) run of the sequence bench needs.

    S = len(seeds), P = prompts, G = generations, T = max_length, n = len(rewards).
    """

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
    loss: str
    max_length: int
    answer_slots: int
    answer_choices: int
    reasoning_needed: tuple[int, int]
    base: BasePolicy
    rewards: tuple[SequenceRewardSpec, ...]
    conditioning: ConditioningSpec | None
    outcome: SequenceOutcome
    bench: str = "sequence"
    #: The exact analysis enumerates binary rewards of unit weight; not attached to sequence studies.
    exact_counts: bool = False

    @property
    def reward_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rewards)

    def reward_index(self, name: str) -> int:
        return self.reward_names.index(name)


# --------------------------------------------------------------------------------------------------
# Validation helpers: each raises with key, allowed values and file
# --------------------------------------------------------------------------------------------------


class Checker:
    """Checks of a study's values; every failure names the file, the cell (``where``), the key and what is
    allowed."""

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


# --------------------------------------------------------------------------------------------------
# One cell's keys → its run settings
# --------------------------------------------------------------------------------------------------


def resolve(check: Checker, data: Mapping, bench: str = "bernoulli") -> RunConfig | SequenceRunConfig:
    """The run settings of one cell: ``data`` holds the study's keys with the cell's overrides applied.

    The keys both benches read are checked here once; each bench's own keys (rewards and what refers to
    them, the policy, the outcome) by its part.

    Raises:
        ValueError: an unknown or missing key, or a value out of range (named with the file and the cell).
    """
    schema = SCHEMAS[bench]
    check.unknown_keys(data, schema.keys)
    for key in schema.required:
        if key not in data:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}' ({schema.keys[key]}).")
    merged = {**schema.defaults, **data}
    seeds = _seeds(check, merged["seeds"], schema.seed_lists)
    methods_raw = merged["methods"]
    if isinstance(methods_raw, str) or not isinstance(methods_raw, Sequence) or not methods_raw:
        check.fail("methods", methods_raw, "a non-empty list of " + ", ".join(available_methods()))
    methods = tuple(check.choice(f"methods[{i}]", m, available_methods()) for i, m in enumerate(methods_raw))
    if len(set(methods)) != len(methods):
        check.fail("methods", methods_raw, "distinct methods")

    if bench == "bernoulli":
        rewards, own = _bernoulli_rewards(check, merged), {}
    else:  # the token layout first: a length reward's limit is checked against max_length
        own = _sequence_layout(check, merged)
        rewards = _sequence_rewards(check, merged, own["max_length"])
    names = [r.name for r in rewards]
    if len(set(names)) != len(names):
        check.fail("rewards", names, "distinct reward names")

    def reward_name(key: str, value: Any) -> str:
        if value not in names:
            check.fail(key, value, "a reward name: " + ", ".join(names))
        return value

    if bench == "bernoulli":
        own["correlations"] = _correlations(check, merged["correlations"], reward_name)
    conditioning = _conditioning(check, merged["conditioning"], rewards, reward_name)
    if bench == "bernoulli":
        own.update(_bernoulli_outcome(check, merged, rewards, reward_name))
    else:
        own["outcome"] = _sequence_outcome(check, merged["outcome"], reward_name)

    if not isinstance(merged["claims"], Sequence) or isinstance(merged["claims"], str):
        check.fail("claims", merged["claims"], "a list of claim ids such as [C3, C4]")
    if not isinstance(merged["description"], str):
        check.fail("description", merged["description"], "a string")

    maxima = schema.maxima
    shared = dict(
        seeds=seeds,
        steps=check.integer("steps", merged["steps"], 1, 1_000_000),
        prompts=check.integer("prompts", merged["prompts"], 1, maxima["prompts"]),
        generations=check.integer("generations", merged["generations"], 2, maxima["generations"]),
        methods=methods,
        convention=check.choice("convention", merged["convention"], available_conventions()),
        optimizer=check.choice("optimizer", merged["optimizer"], OPTIMIZERS),
        learning_rate=check.number("learning_rate", merged["learning_rate"], 0.0, None, low_open=True),
        clip_epsilon=check.number("clip_epsilon", merged["clip_epsilon"], 0.0, None, low_open=True),
        inner_epochs=check.integer("inner_epochs", merged["inner_epochs"], 1, maxima["inner_epochs"]),
    )
    if bench == "bernoulli":
        return RunConfig(
            **shared,
            policy=check.choice("policy", merged["policy"], POLICIES),
            prompt_spread=check.number("prompt_spread", merged["prompt_spread"], 0.0, 10.0),
            rewards=rewards,
            conditioning=conditioning,
            **own,
        )
    return SequenceRunConfig(
        **shared,
        loss=check.choice("loss", merged["loss"], LOSS_TYPES),
        **own,
        rewards=rewards,
        conditioning=conditioning,
    )


def _seeds(check: Checker, raw: Any, lists: bool) -> tuple[int, ...]:
    if not lists:
        return tuple(range(check.integer("seeds", raw, 1, 100_000)))
    if isinstance(raw, int) and not isinstance(raw, bool):
        return tuple(range(check.integer("seeds", raw, 1, 100_000)))
    if isinstance(raw, Sequence) and not isinstance(raw, str) and raw:
        seeds = tuple(check.integer(f"seeds[{i}]", s, 0, 2**31 - 1) for i, s in enumerate(raw))
        if len(set(seeds)) != len(seeds):
            check.fail("seeds", raw, "distinct seeds")
        return seeds
    check.fail("seeds", raw, "an integer ≥ 1 or a non-empty list of distinct integers ≥ 0")


def _conditioning(check: Checker, raw: Any, rewards: Sequence, reward_name: Callable) -> ConditioningSpec | None:
    """Eq. 8's conditioning, the same on both benches; the threshold defaults to the hard reward's top."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        check.fail("conditioning", raw, "a mapping {easy, hard, threshold} or null")
    check.unknown_keys(raw, set(CONDITIONING_KEYS), prefix="conditioning.")
    easy_raw = raw.get("easy")
    easy_list = [easy_raw] if isinstance(easy_raw, str) else list(easy_raw or [])
    if not easy_list:
        check.fail("conditioning.easy", easy_raw, "a reward name or a list of reward names")
    easy = tuple(reward_name("conditioning.easy", e) for e in easy_list)
    hard = reward_name("conditioning.hard", raw.get("hard"))
    if hard in easy:
        check.fail("conditioning.hard", hard, "a reward that is not also an easy (conditioned) reward")
    hard_spec = next(r for r in rewards if r.name == hard)
    threshold = check.number("conditioning.threshold", raw.get("threshold", hard_spec.high))
    return ConditioningSpec(easy, hard, threshold)


def _ranged_bounds(check: Checker, key: str, bounds: Any) -> tuple[float, float]:
    """``[low, high]`` of a ranged reward (both benches)."""
    if (not isinstance(bounds, Sequence) or isinstance(bounds, str) or len(bounds) != 2
            or not all(isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b)
                       for b in bounds) or not bounds[0] < bounds[1]):
        check.fail(f"{key}.range", bounds, "[low, high] with finite low < high (required for scale 'ranged')")
    return float(bounds[0]), float(bounds[1])


# Bernoulli bench ---------------------------------------------------------------------------------


def _bernoulli_reward(check: Checker, raw: Any, key: str) -> RewardSpec:
    if not isinstance(raw, Mapping):
        check.fail(key, raw, "a mapping with keys " + ", ".join(BERNOULLI_REWARD_KEYS))
    check.unknown_keys(raw, BERNOULLI_REWARD_KEYS, prefix=f"{key}.")
    for required in ("name", "behaviours", "rule", "scale", "difficulty"):
        if required not in raw:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}.{required}' "
                             f"({BERNOULLI_REWARD_KEYS[required]}).")
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
        low, high = _ranged_bounds(check, key, raw.get("range"))
    elif "range" in raw:
        check.fail(f"{key}.range", raw["range"], "only with scale 'ranged'")
    return RewardSpec(name, behaviours, rule, scale, difficulty, weight, low, high)


def _rewards_from_template(check: Checker, data: Mapping) -> list:
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


def _bernoulli_rewards(check: Checker, merged: Mapping) -> tuple[RewardSpec, ...]:
    if "rewards" in merged:
        if "reward_template" in merged or "num_rewards" in merged:
            raise ValueError(f"{check.path}{check.where}: give either 'rewards' or 'reward_template' + "
                             "'num_rewards', not both.")
        rewards_raw = merged["rewards"]
    else:
        rewards_raw = _rewards_from_template(check, merged)
    if isinstance(rewards_raw, str) or not isinstance(rewards_raw, Sequence) or not rewards_raw:
        check.fail("rewards", rewards_raw, "a non-empty list of reward definitions")
    return tuple(_bernoulli_reward(check, r, f"rewards[{i}]") for i, r in enumerate(rewards_raw))


def _correlations(check: Checker, raw: Any, reward_name: Callable) -> tuple[CorrelationSpec, ...]:
    correlations = []
    correlated: set[str] = set()
    correlations_raw = raw or []
    if not isinstance(correlations_raw, Sequence) or isinstance(correlations_raw, str):
        check.fail("correlations", correlations_raw, "a list of {rewards: [a, b], value: ρ}")
    for i, item in enumerate(correlations_raw):
        key = f"correlations[{i}]"
        if not isinstance(item, Mapping):
            check.fail(key, item, "a mapping {rewards: [a, b], value: ρ}")
        check.unknown_keys(item, set(CORRELATION_KEYS), prefix=f"{key}.")
        pair = item.get("rewards")
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2 or pair[0] == pair[1]:
            check.fail(f"{key}.rewards", pair, "two different reward names")
        first, second = (reward_name(f"{key}.rewards", p) for p in pair)
        if {first, second} & correlated:
            check.fail(f"{key}.rewards", list(pair), "rewards that are in no other correlation pair")
        correlated |= {first, second}
        value = check.number(f"{key}.value", item.get("value"), *CORRELATION_RANGE)
        correlations.append(CorrelationSpec(first, second, value))
    return tuple(correlations)


def _bernoulli_outcome(check: Checker, merged: Mapping, rewards: tuple[RewardSpec, ...], reward_name: Callable) -> dict:
    """``length_reward``, ``outcome`` and ``exact_counts`` of a Bernoulli study."""
    length_reward = merged["length_reward"]
    if length_reward is not None:
        reward_name("length_reward", length_reward)

    outcome_raw = merged["outcome"]
    if outcome_raw is None:
        outcome = OutcomeSpec()
    else:
        if not isinstance(outcome_raw, Mapping):
            check.fail("outcome", outcome_raw, "a mapping {kind, ...} or null")
        check.unknown_keys(outcome_raw, set(BERNOULLI_OUTCOME_KEYS), prefix="outcome.")
        kind = check.choice("outcome.kind", outcome_raw.get("kind"), OUTCOMES)
        threshold = check.number("outcome.threshold", outcome_raw.get("threshold", 0.5), 0.0, 1.0)
        outcome_rewards = outcome_raw.get("rewards", [r.name for r in rewards])
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
    return {"length_reward": length_reward, "outcome": outcome, "exact_counts": exact_counts}


# Sequence bench ----------------------------------------------------------------------------------


def _sequence_layout(check: Checker, merged: Mapping) -> dict:
    """``max_length``, the answer's slots and choices, ``reasoning_needed`` and the ``base`` policy."""
    max_length = check.integer("max_length", merged["max_length"], 4, 128)
    answer_slots = check.integer("answer_slots", merged["answer_slots"], 1, 2)
    answer_choices = check.integer("answer_choices", merged["answer_choices"], 2, 16)
    needed = merged["reasoning_needed"]
    if (isinstance(needed, str) or not isinstance(needed, Sequence) or len(needed) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in needed)
            or needed[0] > needed[1]):
        check.fail("reasoning_needed", needed, "[low, high], integers with 0 ≤ low ≤ high")
    if needed[1] + answer_slots + 3 > max_length:
        check.fail("reasoning_needed", list(needed), f"a high end ≤ max_length − answer_slots − 3 = "
                                                     f"{max_length - answer_slots - 3} (a right answer must fit)")
    base_raw = merged["base"] or {}
    if not isinstance(base_raw, Mapping):
        check.fail("base", base_raw, "a mapping with keys " + ", ".join(BASE_KEYS))
    check.unknown_keys(base_raw, BASE_KEYS, prefix="base.")
    base_values = {**_BASE_DEFAULTS, **base_raw}
    base = BasePolicy(
        think_continue=check.number("base.think_continue", base_values["think_continue"], 0.0, 1.0, high_open=True),
        off_template=check.number("base.off_template", base_values["off_template"], 0.0, 1.0, high_open=True),
        answer_skill=check.number("base.answer_skill", base_values["answer_skill"], -10.0, 10.0),
        prompt_spread=check.number("base.prompt_spread", base_values["prompt_spread"], 0.0, 10.0),
    )
    return {"max_length": max_length, "answer_slots": answer_slots, "answer_choices": answer_choices,
            "reasoning_needed": (int(needed[0]), int(needed[1])), "base": base}


def _sequence_reward(check: Checker, raw: Any, key: str, max_length: int) -> SequenceRewardSpec:
    if not isinstance(raw, Mapping):
        check.fail(key, raw, "a mapping with keys " + ", ".join(SEQUENCE_REWARD_KEYS))
    check.unknown_keys(raw, SEQUENCE_REWARD_KEYS, prefix=f"{key}.")
    for required in ("name", "kind"):
        if required not in raw:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}.{required}' "
                             f"({SEQUENCE_REWARD_KEYS[required]}).")
    name = raw["name"]
    if not isinstance(name, str) or not name:
        check.fail(f"{key}.name", name, "a non-empty string")
    kind = check.choice(f"{key}.kind", raw["kind"], REWARD_KINDS)
    weight = check.number(f"{key}.weight", raw.get("weight", 1.0))
    scale, low, high, limit = "binary", 0.0, 1.0, 0
    if kind == "correctness":
        scale = check.choice(f"{key}.scale", raw.get("scale", "binary"), CORRECTNESS_SCALES)
        if scale == "ranged":
            low, high = _ranged_bounds(check, key, raw.get("range"))
        elif "range" in raw:
            check.fail(f"{key}.range", raw["range"], "only with scale 'ranged'")
    else:
        for only in ("scale", "range"):
            if only in raw:
                check.fail(f"{key}.{only}", raw[only], "only on a correctness reward")
    if kind == "length":
        if "limit" not in raw:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}.limit' "
                             f"({SEQUENCE_REWARD_KEYS['limit']}).")
        limit = check.integer(f"{key}.limit", raw["limit"], 1, max_length)
    elif "limit" in raw:
        check.fail(f"{key}.limit", raw["limit"], "only on a length reward")
    return SequenceRewardSpec(name, kind, scale, weight, low, high, limit)


def _sequence_rewards(check: Checker, merged: Mapping, max_length: int) -> tuple[SequenceRewardSpec, ...]:
    rewards_raw = merged["rewards"]
    if isinstance(rewards_raw, str) or not isinstance(rewards_raw, Sequence) or not rewards_raw:
        check.fail("rewards", rewards_raw, "a non-empty list of reward definitions")
    return tuple(_sequence_reward(check, r, f"rewards[{i}]", max_length) for i, r in enumerate(rewards_raw))


def _sequence_outcome(check: Checker, raw: Any, reward_name: Callable) -> SequenceOutcome:
    if raw is None:
        return SequenceOutcome()
    if not isinstance(raw, Mapping):
        check.fail("outcome", raw, "a mapping {kind, reward} or null")
    check.unknown_keys(raw, set(SEQUENCE_OUTCOME_KEYS), prefix="outcome.")
    kind = check.choice("outcome.kind", raw.get("kind"), SEQUENCE_OUTCOMES)
    reward = reward_name("outcome.reward", raw.get("reward")) if kind != "none" else ""
    return SequenceOutcome(kind, reward)


# --------------------------------------------------------------------------------------------------
# Overrides and cell names
# --------------------------------------------------------------------------------------------------


def apply_overrides(check: Checker, base: Mapping, overrides: Any, bench: str = "bernoulli") -> dict:
    """The study's keys ``base`` with a variant's (or grid point's) ``overrides`` applied (the module's
    override rules); a key no override can set raises ``ValueError`` listing those that can."""
    schema = SCHEMAS[bench]
    if not isinstance(overrides, Mapping):
        check.fail("(variant)", overrides, "a mapping of keys to override")
    for key in overrides:
        if key in NOT_OVERRIDABLE or key not in schema.keys:
            raise ValueError(f"{check.path}{check.where}: key '{key}' cannot be set in a variant or grid; "
                             f"allowed keys: {', '.join(schema.overridable)}.")
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
        elif key in schema.patches and isinstance(value, Mapping) and isinstance(merged.get(key) or {}, Mapping):
            merged[key] = {**(merged.get(key) or {}), **copy.deepcopy(dict(value))}
        else:
            merged[key] = copy.deepcopy(value)
        if key in ("reward_template", "num_rewards") and "rewards" in merged and "rewards" not in overrides:
            check.fail(key, value, "only in a study that defines its rewards by reward_template")
    return merged


def format_grid_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _label_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "..".join(format_grid_value(v) for v in value)
    return format_grid_value(value)


def grid_label(key: str, value: Any, bench: str = "bernoulli") -> str:
    """``key=value`` of one grid coordinate.

    Bernoulli studies name every coordinate ``key=value``. Sequence studies name patches by what they
    patch: ``base.off_template=0.1`` for a patch of the base policy, ``correctness.range=0..1`` for a patch of
    a reward (``rewards: {correctness: {range: [0, 1]}}``), ``conditioning=length|correctness`` (easy|hard) or
    ``conditioning=none`` for the conditioning.
    """
    if bench == "bernoulli":
        return f"{key}={format_grid_value(value)}"
    if value is None:
        return f"{key}=none"
    if key == "conditioning" and isinstance(value, Mapping):
        easy = value.get("easy")
        easy = "+".join(easy) if isinstance(easy, (list, tuple)) else easy
        return f"{key}={easy}|{value.get('hard')}"
    if key == "rewards" and isinstance(value, Mapping):
        parts = []
        for name, patch in value.items():
            if isinstance(patch, Mapping):
                parts += [f"{name}.{field}={_label_value(v)}" for field, v in patch.items()]
            else:  # not a patch: refused when the cell is resolved
                parts.append(f"{name}={patch}")
        return ",".join(parts)
    if isinstance(value, Mapping):
        return ",".join(f"{key}.{k}={format_grid_value(v)}" for k, v in value.items())
    return f"{key}={format_grid_value(value)}"
