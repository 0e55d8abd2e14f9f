"""Measurement code behind ``benchmarks/gpu_check.py``, ``paper_scale.py`` and ``step_time.py``: the
scripts parse their options and call these modules."""
