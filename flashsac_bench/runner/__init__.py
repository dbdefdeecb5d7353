"""Training runner: collector/learner overlap, device replay, timing summaries, sweeps.

One run from a composed config: `flashsac_bench.hydra_app.train` (the Hydra glue beside
`__main__`); this package holds the runner's parts and imports none of them itself, so that
`flashsac_bench.analysis.sweep_callback` (instantiated by Hydra for every command) does not pull
in torch.
"""
