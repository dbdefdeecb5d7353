"""Deterministic evaluation of a trained policy (`python -m flashsac_bench.evaluate`).

evaluate: one evaluation (rollouts, robustness conditions, eval.json, the video; cli.evaluate
checks a command and prints its result); config: the options (EvalConfig); rollout: episodes
and their tracking metrics; render: the offscreen video; robustness: conditions no training
run saw (push, link masses, edge commands); trained: a learner rebuilt from a runner checkpoint
(evaluate, export and convert load it); policy: the trained actor as a plain module,
tanh(mean), that export writes.
"""
