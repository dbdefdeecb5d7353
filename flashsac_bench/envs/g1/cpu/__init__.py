"""The G1 walk on CPU MuJoCo (backend=mujoco): batched models stepped by a thread pool or by
worker processes, each shard computing the task for its envs."""
