"""flashsac_bench's Hydra launcher plugin: the SLURM launcher of conf/hydra/launcher/slurm_*.yaml
(Hydra takes launchers only from the hydra_plugins namespace package)."""
