"""``scopecache simulate``: policies, key designs and client designs compared offline.

The requests of a trace as the server would see them, the key designs
(strategies), the untimed comparison, the timed comparison of client
designs (the ``timed`` package: its model, its run and the speculation
rules), the report, and the command that picks among them.
"""
