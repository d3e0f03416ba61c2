"""What the benchmarks and the tests both run: loopback servers and processes (servers.py), simulated
users (loadgen.py), a lab's deployment behind nginx (deployment.py) and a fixture OpenReview API
(openreview_server.py).

Benchmarks, run as scripts (`python benchmarks/load.py`), import it as `harness`; tests as
`benchmarks.harness` (pytest puts the project folder on `sys.path`: `pythonpath` in pyproject.toml).
Inside, the modules import each other relatively, so both names work.
"""
