"""The ``synthetic`` kind registered: a synthetic table of the declared columns from noisy 1- and
2-way marginals. The kind, its mechanisms, its model and the sampler the published files use live
in privacy_engine/synthetic.py (the web side calls :func:`privacy_engine.synthetic_table`)."""

from privacy_engine.kinds.base import register
from privacy_engine.synthetic import SyntheticKind

KIND = register(SyntheticKind())
