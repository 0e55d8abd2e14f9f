"""``xct-bench impute``: the protocol and its runs (:mod:`.protocol`), and their table (:mod:`.table`)."""
