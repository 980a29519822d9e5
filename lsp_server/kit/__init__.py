"""The tuning kit: traces synthesized, replayed and simulated, the demo, prewarming.

The client that drives a real server process, the reference-service
launcher, ``trace synth``, ``replay``, ``simulate`` (untimed and timed),
``demo`` and ``prewarm``. Builds on ``server`` and what is below it; not
on ``diagnose``.
"""
