"""Stage 3, action: everything that touches the world — the one process gateway (``runner``, ``gateway``), launcher
command lines, probes, scheduler queries and their parsers, spare claims, checkpoints, preflight checks, the
observer that gathers answers and the actor that carries a decision out."""
