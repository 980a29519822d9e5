"""``scopecache trace synth``: a synthesized developer typing the given files.

``plan`` decides up front what the developer will do to each file,
``typist`` types it as trace events, ``session`` runs both over the files
and checks that the trace reproduces them.
"""
