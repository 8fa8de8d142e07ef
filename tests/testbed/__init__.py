"""Real clusters of N nodes on this machine, for tests and for humans: SLURM 22.05 (``cluster.py``) and OpenPBS
(``pbs.py``, built by ``pbs_build.py``), their nodes sharing one namespace init (``node_init.py``).

``python -m testbed up|down|crash NODE|...`` drives the SLURM bed by hand, ``python -m testbed pbs ...`` the PBS one.
"""
