"""Controlled policy-gradient bench ("sim" scale): the advantage estimator in isolation, many seeds, minutes.

A Bernoulli policy over D behaviours per prompt is sampled G times per prompt; each rollout earns n
rewards defined in a study file (config/sim/*.yaml); the policy is updated with the clipped policy-gradient
objective and an advantage from :func:`gdpo.advantages.compute_advantages` (every registered method and
convention). Vectorised over seeds, deterministic by seed.

A study file with ``bench: sequence`` runs the sequence bench instead (:mod:`gdpo.sim.sequence`: a token policy
with an end token and a length cap, rewards read from the sampled sequence by :mod:`gdpo.sim.sequence_rewards`,
study keys of both benches in :mod:`gdpo.sim.schema`); :mod:`gdpo.sim.noise_law` measures the decoupled estimator's
gradient-noise law on the Bernoulli bench.

Public API:

- :func:`load_study` (path) → :class:`Study`
- :func:`study_runs` (study) → [(variant, method), ...]
- :func:`run_study` (study, variant=None, method=None) → tidy ``pandas.DataFrame``
- :func:`summarise` (df) → means and 95 % CIs per study, variant, method, reward
- :func:`plot_study` (df, out_png) → PNG + PDF
"""

import importlib

#: Public name → the submodule defining it. Loaded on first use, so that the light study-file checks
#: (:mod:`gdpo.sim.config`, used when a workflow is planned) do not pull in torch and matplotlib.
_EXPORTS = {
    "PolicyGradientBench": "gdpo.sim.engine",
    "RunConfig": "gdpo.sim.schema",
    "Study": "gdpo.sim.config",
    "load_study": "gdpo.sim.study",
    "parse_study": "gdpo.sim.config",
    "plot_study": "gdpo.sim.plots",
    "run_study": "gdpo.sim.study",
    "seedwise_advantages": "gdpo.sim.engine",
    "study_runs": "gdpo.sim.study",
    "summarise": "gdpo.sim.summary",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gdpo.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
