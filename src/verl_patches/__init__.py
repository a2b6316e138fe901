"""verl-patches: keep fixes to verl as a patch series against a pinned verl release."""

__version__ = "0.1.0"
