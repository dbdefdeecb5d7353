"""Training runner: collector/learner overlap, device replay, timing summaries, sweeps.

One run from a checked config: `runner.loop.Runner`, which the command line
(flashsac_bench.cli.train) calls and which imports no CLI. This package holds the runner's parts
and imports none of them itself, so that `flashsac_bench.analysis.sweep_callback` (instantiated
by Hydra for every command) does not pull in torch.
"""
