"""The trace format: events of an editing session, read and written as JSON lines.

The format is DESIGN.md's contract. The server records traces, and the
tuning kit synthesizes, reads and replays them.
"""
