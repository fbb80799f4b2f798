"""Tool calling (PAPER.md §3, ToolRL recipe; claims C3, C4): prompt format, rewards, data, BFCL-v3 evaluation.

- :mod:`.output_format`: the system prompt listing the tools, the answer format
  (``<think>``, ``<tool_call>``, ``<response>``) and its parser.
- :mod:`.rewards`: ``correct`` ∈ [−3, 3] and ``format`` ∈ {0, 1} (``REWARD_FUNCTIONS``).
- :mod:`.data`: ``build_dataset`` from the BFCL-v3 split (mini scale) or ToolRL's 4k set (paper scale).
- :mod:`.evaluation`: ``evaluate`` generates on the held-out BFCL items (transformers, or vLLM with the task
  option ``eval_backend: vllm``: :mod:`gdpo.generation.vllm_generate`) and scores them with BFCL's checker.
- :mod:`.bfcl_split`, :mod:`.bfcl_score`: run in the separate BFCL environment (``.venv-bfcl``).

Importing the package needs only the standard library (the BFCL environment imports it too); ``datasets``,
``torch`` and the generation helpers are imported where they are used.
"""

from gdpo.tasks.tool_calling.data import build_dataset, reference_completion, required_files
from gdpo.tasks.tool_calling.diagnostics import completion_diagnostics
from gdpo.tasks.tool_calling.evaluation import evaluate
from gdpo.tasks.tool_calling.rewards import REWARD_FUNCTIONS

__all__ = ["REWARD_FUNCTIONS", "build_dataset", "completion_diagnostics", "evaluate", "reference_completion", "required_files"]
