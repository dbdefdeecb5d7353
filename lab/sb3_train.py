"""One Stable-Baselines3 SAC training (a child process of lab.sb3_bench, run from the repo root):

    python -m lab.sb3_train --env HalfCheetah-v5 --seed 1 --steps 1000000 --out DIR

Its hyperparameters are rl-baselines3-zoo's for the env (lab.sb3_bench.RL_ZOO); every finished
training episode goes to DIR/episodes.jsonl as it ends (its env steps, return, length and the
Unix time), so that a run cut by its deadline keeps what it did; DIR/meta.json says what ran,
and (--eval-episodes) the returns of the trained policy's deterministic episodes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--env", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="auto", help="SB3's device (auto: CUDA when there)")
    ap.add_argument("--threads", type=int, default=0, help="torch's CPU threads (0: its default)")
    ap.add_argument("--eval-episodes", type=int, default=0, help="deterministic, after training")
    args = ap.parse_args(argv)

    import gymnasium as gym
    import stable_baselines3
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    from lab.sb3_bench import sb3_hyperparameters

    if args.threads > 0:  # more busy threads than free cores spin-wait on each other
        torch.set_num_threads(args.threads)
    hyper = sb3_hyperparameters(args.env)
    args.out.mkdir(parents=True, exist_ok=True)
    episodes = open(args.out / "episodes.jsonl", "a", buffering=1)  # noqa: SIM115 - closed below

    class Episodes(BaseCallback):
        """Each finished episode (SB3's Monitor puts it in the step's info) as one line."""

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    ep = info["episode"]
                    line = {"steps": self.num_timesteps, "return": float(ep["r"])}
                    line.update(length=int(ep["l"]), unix=time.time())
                    episodes.write(json.dumps(line) + "\n")
            return True

    t0 = time.time()
    model = SAC("MlpPolicy", gym.make(args.env), seed=args.seed, device=args.device, **hyper)
    meta: dict[str, Any] = {
        "env_id": args.env,
        "seed": args.seed,
        "steps": args.steps,
        "hyperparameters": hyper,
        # What SAC resolved them to (SB3's defaults where the zoo names none).
        "resolved": {
            "learning_rate": model.learning_rate,
            "buffer_size": model.buffer_size,
            "learning_starts": model.learning_starts,
            "batch_size": model.batch_size,
            "tau": model.tau,
            "gamma": model.gamma,
            "train_freq": str(model.train_freq),
            "gradient_steps": model.gradient_steps,
            "ent_coef": str(model.ent_coef),
            "target_entropy": float(model.target_entropy),
            "net_arch": str(model.policy.net_arch),
        },
        "device": str(model.device),
        "torch_threads": torch.get_num_threads(),
        "stable_baselines3": stable_baselines3.__version__,
        "gymnasium": gym.__version__,
        "torch": torch.__version__,
        "started_unix": t0,
    }
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    try:
        model.learn(total_timesteps=args.steps, callback=Episodes())
    finally:
        episodes.close()
    meta.update(finished_unix=time.time(), num_timesteps=int(model.num_timesteps))
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if args.eval_episodes:
        meta["eval"] = evaluate(model, args.env, args.eval_episodes)
        (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return 0


def evaluate(model: Any, env_id: str, episodes: int) -> dict[str, Any]:
    """The trained policy's deterministic episodes in a fresh env (seeded EVAL_SEED, as
    flashsac_bench.evaluate's default seed)."""
    import gymnasium as gym
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from lab.sb3_bench import EVAL_SEED

    env = DummyVecEnv([lambda: Monitor(gym.make(env_id))])
    env.seed(EVAL_SEED)
    try:
        returns, lengths = evaluate_policy(
            model, env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
        )
    finally:
        env.close()
    # return_episode_rewards=True: per-episode lists, not the (mean, std) pair
    assert isinstance(returns, list) and isinstance(lengths, list)
    lengths = [int(n) for n in lengths]
    return {"episodes": episodes, "returns": [float(r) for r in returns], "lengths": lengths}


if __name__ == "__main__":
    sys.exit(main())
