"""The lab: benchmark internals, parity statistics and walk tables that scripts/ use.

Not part of the installed package (the wheel ships flashsac_bench/ only): the lab uses the
product, the product never imports the lab (tests/learner/test_import_graph.py). Scripts reach
it through scripts/_repo.py, tests through pytest's rootdir.
"""
