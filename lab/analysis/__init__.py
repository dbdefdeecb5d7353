"""Learning-parity statistics and the time-to-walk tables (scripts/learning_parity.py,
scripts/walk_utd.py): they read run dirs the product wrote."""
