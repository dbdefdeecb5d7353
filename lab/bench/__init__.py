"""Benchmarks and validation of the learner and the env; scripts/ holds their thin CLIs.

learner_bench, learner_grid: learner-only cycle timing (scripts/bench_learner.py);
env_bench, env_grid: env-steps/s beside the physics ceiling (scripts/bench_env.py);
numerics: the fast paths against eager (scripts/validate_numerics.py);
stability: replays of the captured cycle (scripts/validate_replay_stability.py);
kernel_profile: kernels per cycle and their GPU time (scripts/profile_cycle.py);
synthetic: the G1-shaped learners and replay contents they share.
"""
