"""GDPO reproducibility suite: advantage estimators, exact analysis, training and reporting."""

__version__ = "0.1.0"
