"""One completion request's way: key, caches, in-flight streams, throttle, upstream.

The pipeline, the in-flight registry, the miss throttle, the speculative
prefetch, and the notices a failure on that way leaves for the user.
Builds on ``documents`` and ``observe`` (and the settings model).
"""
