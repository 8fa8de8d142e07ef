"""dask-jobqueue adapter for hotspare (cluster objects arrive with their own issue).

Imports only the public API of :mod:`hotspare`.
"""
