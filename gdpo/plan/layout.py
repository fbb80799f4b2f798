"""Where files go: :class:`RunKey` (task, method, seed under a root) and the one definition of a run's
directory, :data:`RUN_LAYOUT`, with the wildcards of the per-run rules (:data:`RUN_WILDCARDS`); the roots and
directories the workflow's rules write (:func:`runs_root`, :func:`model_dir`, :func:`warmup_model_dir`) and the
names they share (:data:`BASE_METHOD`, :data:`EVAL_FILE`, :data:`MODELS_DIR`)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path, PurePath
from typing import Any

from gdpo.plan.models import model_slug
from gdpo.plan.values import whole_number


#: A run's directory below its root (``results/<scale>/runs`` or an evidence directory): the one place the
#: layout is spelled. Its fields are :class:`RunKey`'s and the wildcards of every per-run Snakemake rule.
RUN_LAYOUT = "{task}/{method}/seed{seed}"
#: What each field of :data:`RUN_LAYOUT` may hold (the rules' wildcard constraints; task names as the config
#: schema allows them).
RUN_WILDCARDS = {"task": r"[A-Za-z0-9_.-]+", "method": r"[A-Za-z0-9_]+", "seed": r"\d+"}
#: The method name of the untrained model's evaluation (the tables' "base" rows).
BASE_METHOD = "base"
#: A run directory's evaluation result.
EVAL_FILE = "eval.json"
#: Where the ``prepare_model`` rule materialises each model spec.
MODELS_DIR = "resources/models"


def _layout_regex() -> re.Pattern:
    pattern = re.escape(RUN_LAYOUT)
    for field, allowed in RUN_WILDCARDS.items():
        pattern = pattern.replace(re.escape("{" + field + "}"), f"(?P<{field}>{allowed})")
    return re.compile(pattern)


_RUN_DIR = _layout_regex()
_LAYOUT_DEPTH = RUN_LAYOUT.count("/") + 1


def check_directory_name(field: str, value: Any) -> None:
    """``ValueError`` unless ``value`` can be the ``field`` (``task`` or ``method``) part of a run's directory."""
    allowed = isinstance(value, str) and re.fullmatch(RUN_WILDCARDS[field], value)
    # "." and ".." match the task pattern but are no directory of their own.
    if not allowed or value in (".", ".."):
        characters = "_ . -" if field == "task" else "_"
        raise ValueError(f"{field} {value!r} cannot name a run directory: use letters, digits and "
                         f"{characters} only ({RUN_WILDCARDS[field]}), not . or ..")


def runs_root(scale: str) -> Path:
    """``results/<scale>/runs``: the root of a scale's run directories."""
    return Path("results") / scale / "runs"


@dataclasses.dataclass(frozen=True)
class RunKey:
    """One training run or evaluation: ``<root>/<task>/<method>/seed<seed>`` (:data:`RUN_LAYOUT`).

    Attributes:
        task: the config's task name.
        method: an advantage method, or :data:`BASE_METHOD` for the untrained model's evaluation.
        seed: the training seed (≥ 0).
        root: the directory holding the runs: ``results/<scale>/runs`` (:func:`runs_root`), an evidence
            directory, or a log directory.
    """

    task: str
    method: str
    seed: int
    root: Path = Path(".")

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        for field in ("task", "method"):
            check_directory_name(field, getattr(self, field))
        if not whole_number(self.seed, 0):
            raise ValueError(f"seed {self.seed!r} of run {self.task}/{self.method} must be an integer ≥ 0.")

    def path(self) -> Path:
        """The run's directory, ``<root>/<task>/<method>/seed<seed>``."""
        return self.root / RUN_LAYOUT.format(task=self.task, method=self.method, seed=self.seed)

    @classmethod
    def from_path(cls, run_dir: str | PurePath) -> RunKey:
        """The key of a run directory (:meth:`path`'s inverse); ``ValueError`` if ``run_dir`` is not one."""
        parts = PurePath(run_dir).parts
        match = _RUN_DIR.fullmatch("/".join(parts[-_LAYOUT_DEPTH:]))
        if len(parts) < _LAYOUT_DEPTH or not match:
            raise ValueError(f"{run_dir} is not a run directory <root>/{RUN_LAYOUT}.")
        return cls(match["task"], match["method"], int(match["seed"]), Path(*parts[:-_LAYOUT_DEPTH]))

    @classmethod
    def from_file(cls, path: str | PurePath) -> RunKey:
        """The key of the run directory holding ``path`` (``metrics.jsonl``, ``eval.json``, ...)."""
        try:
            return cls.from_path(PurePath(path).parent)
        except ValueError:
            raise ValueError(f"{path} is not inside a run directory <root>/{RUN_LAYOUT}/.") from None

    @staticmethod
    def pattern(root: str | PurePath) -> str:
        """``<root>/{task}/{method}/seed{seed}``: :meth:`path` with the fields as Snakemake wildcards."""
        root = PurePath(root).as_posix()
        return RUN_LAYOUT if root == "." else f"{root}/{RUN_LAYOUT}"

    @classmethod
    def from_wildcards(cls, wildcards, root: str | PurePath) -> RunKey:
        """The key of a per-run job (its ``task``, ``method`` and ``seed`` wildcards) under ``root``."""
        return cls(wildcards.task, wildcards.method, int(wildcards.seed), Path(root))

    def under(self, root: str | PurePath) -> RunKey:
        """The same run under another root (e.g. its committed evidence, or its log directory)."""
        return dataclasses.replace(self, root=Path(root))

    def identity(self) -> dict:
        """``{"task", "method", "seed"}``: the run's columns in the tidy CSVs."""
        return {"task": self.task, "method": self.method, "seed": self.seed}


def model_dir(spec: str) -> str:
    """``resources/models/<slug>``: the directory the ``prepare_model`` rule makes for a model spec."""
    return f"{MODELS_DIR}/{model_slug(spec)}"


def warmup_model_dir(scale: str, task: str) -> str:
    """``results/<scale>/warmup/<task>/model``: a task's warmed-up model (rule ``warmup_model``)."""
    return f"results/{scale}/warmup/{task}/model"
