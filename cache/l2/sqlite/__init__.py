"""The default L2: one SQLite file shared live by every editor window on the machine.

``store`` is the store; ``file`` opens the file (pragmas, the health check,
a damaged file moved aside); ``schema`` is the file format and its
migrations; ``changes`` reads the change log that tells one process what
the others stored or invalidated.
"""
