"""``scopecache diagnose``: why are completions slow? Each layer measured on its own.

Network, TLS, encoding, the service, and the client's view through a real
server. Builds on ``server`` and what is below it; not on the tuning kit.
"""
