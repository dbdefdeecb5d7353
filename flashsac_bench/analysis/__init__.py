"""The sweep comparison: one table and plot over a multirun's run dirs (scripts/compare.py, and
the Hydra callback that rebuilds them after every multirun job). The parity statistics and
walk tables are the lab's (lab/analysis): the product never imports the lab."""
