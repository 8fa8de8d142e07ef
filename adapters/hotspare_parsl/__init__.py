"""Parsl adapter for hotspare (the FailoverProvider arrives with its own issue).

Imports only the public API of :mod:`hotspare`.
"""
