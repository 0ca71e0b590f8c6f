"""PrismIO's analysis API over the lake: `IOFrame` (frame.py), its pattern rules (patterns.py)
and the timeline plot (timeline.py)."""

from apps.analysis.frame import COUNTER_COLUMNS, COVER_COLUMNS, JOB_COLUMNS, OPS_COLUMNS, IOFrame

__all__ = ["COUNTER_COLUMNS", "COVER_COLUMNS", "IOFrame", "JOB_COLUMNS", "OPS_COLUMNS"]
