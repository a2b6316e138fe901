"""verl-patches: keep fixes to verl as a patch series against a pinned PyPI sdist."""

__version__ = "0.1.0"
