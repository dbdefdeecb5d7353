"""flashsac_bench: the FlashSAC learner with eager / compile / cudagraph execution paths."""

__version__ = "0.1.0"
