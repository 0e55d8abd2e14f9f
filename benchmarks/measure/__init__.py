"""Measurement code behind the lab's scripts (``gpu_check``, ``paper_scale``, ``step_time``): the
scripts parse their options and call these modules."""
