"""``scopecache simulate``: policies, key designs and client designs compared offline.

The requests of a trace as the server would see them, the key designs
(strategies), the untimed comparison, the timed model and its run, the
report, and the command that picks among them.
"""
