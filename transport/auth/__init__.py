"""Credentials for the completion service, behind one small interface.

``provider`` has the interface (``AuthProvider``) and the static key;
``source`` what a token source is; ``tokens`` the refreshing provider over a
source; ``oauth`` and ``command`` the two sources; ``kinds`` which provider
the ``auth.kind`` setting names. Imports nothing outside ``transport``.
"""
