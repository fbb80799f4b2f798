"""Coding task family (PAPER.md §3 Coding; Table 5): write a Python program that passes hidden tests.

Rewards (:mod:`rewards`): ``pass`` (fraction of tests passed), ``length_conditioned`` (1 iff within
``length_limit`` tokens and every test passes) and ``bug`` (1 iff no compile or runtime error); a config
picks the 2-objective (pass, length_conditioned) or 3-objective (+ bug) setting through its reward weights.
Programs run in the sandbox of :mod:`sandbox`.

Options (the task's config keys, checked by :func:`data.resolve_options`):

- ``train_data``: ``"procedural"`` (mini: small generated function problems) or ``"eurus2_rl"``
  (Eurus-2-RL-Data's coding problems; the hub id ``PRIME-RL/Eurus-2-RL-Data`` is accepted too);
- ``eval_data``: one name or a list from ``procedural``, ``humaneval``, ``apps``, ``codecontests``,
  ``codeforces``, ``taco``. The last four are the coding rows of Eurus-2-RL-Data's validation split with that
  ``data_source``, unless ``data_dir`` holds a file of that name (:mod:`sources`); the hub ids
  ``codeparrot/apps``, ``deepmind/code_contests``, ``open-r1/codeforces`` and ``BAAI/TACO`` are accepted as
  aliases of these names, and those hub sets are never read;
- ``length_limit`` (required, no default: the paper's l, which it does not state): tokens for
  ``length_conditioned`` and the ``exceed`` metric;
- ``data_dir``: directory of local paper-scale files (see :mod:`sources`);
- ``time_limit``: seconds per test run, overriding each data set's default;
- ``max_tests``: at most this many tests per competition problem (CodeContests has ~100 per problem);
- ``eval_backend``: ``"hf"`` (default: transformers) or ``"vllm"`` (vLLM: a GPU, or a CPU with
  ``GDPO_VLLM_PYTHON``), where the evaluation's completions come from (:mod:`gdpo.generation.vllm_generate`).
"""

from __future__ import annotations

from gdpo.tasks.code.data import build_dataset, load_benchmark, resolve_options
from gdpo.tasks.code.diagnostics import completion_diagnostics
from gdpo.tasks.code.evaluation import evaluate
from gdpo.tasks.code.rewards import REWARD_FUNCTIONS

__all__ = ["REWARD_FUNCTIONS", "build_dataset", "completion_diagnostics", "evaluate", "load_benchmark", "resolve_options"]
