"""Math task family (PAPER.md §3, DLER setup; Tab. 3-4, Figs. 5-7).

- rewards (:mod:`.rewards`): ``correct`` (math-verify, or a reasoning-gym scorer), ``length`` (≤
  ``length_limit`` tokens) and ``length_conditioned`` (length paid only when correct, Eq. 8);
- data (:mod:`.data`, :mod:`.benchmarks`): reasoning-gym problems at mini scale, DeepScaleR-Preview and
  the five benchmarks of Tab. 3 at paper scale;
- evaluation (:mod:`.evaluation`): lm-eval over the repository's task files, Acc and Exceed per benchmark;
- warm-up answers (:mod:`.worked`): running totals of sum problems, for the optional warm-up.
"""

from gdpo.tasks.math.data import build_dataset
from gdpo.tasks.math.diagnostics import completion_diagnostics
from gdpo.tasks.math.evaluation import evaluate
from gdpo.tasks.math.rewards import REWARD_FUNCTIONS
from gdpo.tasks.math.worked import reference_completion

__all__ = ["REWARD_FUNCTIONS", "build_dataset", "completion_diagnostics", "evaluate", "reference_completion"]
