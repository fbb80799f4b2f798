"""What the typed settings of every job share (:class:`RunSettings <gdpo.plan.run_settings.RunSettings>`,
:class:`EvalSettings <gdpo.plan.eval_settings.EvalSettings>`,
:class:`WarmupSettings <gdpo.plan.warmup_settings.WarmupSettings>`): their JSON form (:class:`JobSettings`), the
helpers their checks use, and the backends a job may report its metrics to (:func:`report_backends`)."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Self

from gdpo.methods import MethodVariant
from gdpo.tasks import DATA_OPTION_KEYS


#: Backends a training run may report its metrics to while it runs (TRL's ``report_to``; config
#: ``training.report_to``, default ``none``). transformers' ``all`` is not among them: it would report to
#: whatever happens to be installed.
REPORT_BACKENDS = ("tensorboard", "trackio", "wandb")


class JobSettings:
    """The JSON form shared by a job's typed settings (:class:`RunSettings`, :class:`EvalSettings`,
    :class:`WarmupSettings`; each a frozen dataclass): :meth:`to_json` is the job's ``--settings`` and the text
    Snakemake compares to decide a re-run, so it keeps the field order and names.

    A subclass names what it is (``_WHAT``) and the function that makes it (``_MADE_BY``) for its error
    messages, and may list fields that are left out of :meth:`to_dict` while None (``_LEFT_OUT_WHEN_NONE``: keys
    its settings hold only where the config sets them).
    """

    _WHAT = "settings"
    _MADE_BY = "gdpo.plan"
    _LEFT_OUT_WHEN_NONE: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The settings as JSON-ready data (field order kept; tuples as lists)."""
        return {field.name: _plain(getattr(self, field.name)) for field in dataclasses.fields(self)
                if not (field.name in self._LEFT_OUT_WHEN_NONE and getattr(self, field.name) is None)}

    def to_json(self) -> str:
        """The settings as one line of JSON (the rule's ``--settings``); :meth:`from_json` reads it."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping) -> Self:
        """Settings from :meth:`to_dict`'s form; ``ValueError`` naming any key that is not a field."""
        names = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"{cls._WHAT} have unknown keys {unknown}; the fields are {', '.join(names)}. "
                             f"Make them with {cls._MADE_BY}.")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Settings from :meth:`to_json`'s text."""
        data = json.loads(text)
        if not isinstance(data, Mapping):
            raise ValueError(f"{cls._WHAT} must be a JSON object, got {text[:80]!r}.")
        return cls.from_dict(data)


def set_field(settings: JobSettings, name: str, value: Any) -> None:
    """Set a field of frozen settings (in ``__post_init__`` only)."""
    object.__setattr__(settings, name, value)


def copied_mapping(settings: JobSettings, name: str, fix: str) -> None:
    """Replace the mapping field ``name`` by a deep copy, so that the config is never shared with a job;
    ``ValueError`` with ``fix`` if it is no mapping."""
    value = getattr(settings, name)
    if not isinstance(value, Mapping):
        raise ValueError(f"{settings._WHAT}: {name} must be a mapping, got {value!r}{fix}.")
    set_field(settings, name, copy.deepcopy(dict(value)))


def check_data_options(where: str, options: Mapping) -> None:
    """``ValueError`` naming every key of ``options`` that is not a data option (:data:`DATA_OPTION_KEYS`)."""
    unknown = sorted(set(options) - set(DATA_OPTION_KEYS))
    if unknown:
        raise ValueError(f"{where}: options {unknown} are no data options; the task's data options are "
                         f"its keys among {', '.join(DATA_OPTION_KEYS)}.")


def check_method_options(settings: JobSettings, where: str) -> None:
    """Set ``settings.method_options`` to the options checked and as the estimator reads them (``{}`` as None:
    left out of the JSON, which reads as a run without options always has); ``ValueError`` after ``where``."""
    if settings.method_options is None:
        return
    try:
        options = MethodVariant(settings.method, settings.method_options).options
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    set_field(settings, "method_options", options or None)


def report_backends(report_to: Any) -> list[str]:
    """The backends a ``report_to`` value names: a name or a list of names of :data:`REPORT_BACKENDS`, or
    ``"none"`` (also alone in a list) for none. ``ValueError`` naming the allowed values otherwise."""
    names = [report_to] if isinstance(report_to, str) else report_to
    allowed = ", ".join(("none", *REPORT_BACKENDS))
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise ValueError(f"report_to {report_to!r} must be a backend name or a list of them: {allowed}.")
    unknown = [name for name in names if name not in ("none", *REPORT_BACKENDS)]
    if unknown:
        raise ValueError(f"report_to names unknown backend(s) {unknown}; allowed values: {allowed} (name each "
                         "backend: 'all' is not accepted).")
    if "none" in names and len(names) > 1:
        raise ValueError(f"report_to {list(names)} combines 'none' with backends; give 'none' alone or only "
                         "backends.")
    if len(set(names)) != len(names):
        raise ValueError(f"report_to {list(names)} repeats a backend; name each once.")
    return [name for name in names if name != "none"]


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data: tuples (also inside mappings and lists) as lists."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
