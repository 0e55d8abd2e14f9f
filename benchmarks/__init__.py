"""The project's own lab: GPU checks, the paper-scale queue, step timing and the records they
write. Run from a checkout (``python -m benchmarks.<script>``); it imports ``xct_estimators``,
which never imports it."""
