"""Analysis of finished runs: the learning-parity statistics, report and plots
(scripts/learning_parity.py) and the sweep comparison tables (scripts/compare.py and the
Hydra callback that rebuilds them after every multirun job)."""
