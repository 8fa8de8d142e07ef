"""A real SLURM 22.05 cluster of N nodes on this machine, for tests and for humans.

See ``cluster.py``; ``python -m tests.testbed up|down|crash NODE|...`` drives it by hand.
"""
