"""``xct-bench detect``: the protocol and its runs (:mod:`.protocol`), and their table (:mod:`.table`)."""
