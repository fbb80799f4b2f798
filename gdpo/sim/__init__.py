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

from gdpo.sim.config import Study, parse_study
from gdpo.sim.engine import PolicyGradientBench, seedwise_advantages
from gdpo.sim.plots import plot_study
from gdpo.sim.schema import RunConfig
from gdpo.sim.study import load_study, run_study, study_runs
from gdpo.sim.summary import summarise

__all__ = [
    "PolicyGradientBench",
    "RunConfig",
    "Study",
    "load_study",
    "parse_study",
    "plot_study",
    "run_study",
    "seedwise_advantages",
    "study_runs",
    "summarise",
]
