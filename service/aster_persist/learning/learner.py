"""The learning package's entry point, kept for its imports: `Learner` is in `worker`,
and the validation of the model's items in `validation` (see their docstrings).
"""

from __future__ import annotations

from .validation import normal_item
from .worker import Learner

__all__ = ["Learner", "normal_item"]
