"""The claim rules: how each claim of :data:`gdpo.reporting.contract.CLAIMS` is judged at each scale of evidence.

- :mod:`.registry`: ``@claim_rule(claim, scale)`` and the lookups the ledger iterates;
- :mod:`.samples`: per-seed samples and the intervals of their differences;
- :mod:`.decisions`: the pure decisions (samples in, a :class:`~.decisions.Decision` out), which the calibration
  (:mod:`gdpo.reporting.calibration`) drives with simulated samples;
- :mod:`.exact`, :mod:`.sim`, :mod:`.model`: the rules of each scale, each rule's docstring its contract;
  :mod:`.model_evidence`: eval.csv and steps.csv as the model-scale rules read them.

One name per kind, the claim last: ``judge_cN`` reads a scale's evidence into a verdict (registered),
``decide_cN`` decides on samples, ``criteria_cN`` says what each interval must show. Importing the package
registers every rule, each with its power design; a claim added after the paper's lives in one module of
:mod:`.claims` (``docs/add-a-claim.md``).
"""

from gdpo.reporting.verdicts import exact, model, sim  # noqa: F401  (importing them registers their rules)
from gdpo.reporting.verdicts import claims  # noqa: F401,E402  (then every added claim's module)
from gdpo.reporting.verdicts.registry import ClaimRule, Scale, claim_rule, rule_for, rules_of

__all__ = ["ClaimRule", "Scale", "claim_rule", "rule_for", "rules_of"]
