"""The command lines: what a user runs, and nothing the product needs to work.

  train            python -m flashsac_bench (flashsac-bench): training runs and sweeps
  evaluate         python -m flashsac_bench.evaluate: deterministic rollouts, eval.json, video
  export           python -m flashsac_bench.export: the trained actor as TorchScript / ONNX
  convert          python -m flashsac_bench.convert: checkpoints to and from unilab-rl
  preflight        every job of a command composed and checked once, before anything is created
  hydra_flags      Hydra's own flags: those that would read a file as code are refused
  tool             the Hydra command line of evaluate / export / convert on a typed schema
  runtime_checks   what a config alone cannot tell: this machine, the env factory, the model file
  runtime_estimate the up-front warning for a long CPU run
  errors           bad input as one line on stderr and an exit status, never a traceback

The layers: the CLI checks a command, calls the product (runner, evaluation, interop) and turns
its errors into one line; nothing outside this package imports it but the entry modules
(flashsac_bench.__main__ / .evaluate / .export / .convert) and code that starts a checked
training run the way the CLI does (cli.train.train).
"""
