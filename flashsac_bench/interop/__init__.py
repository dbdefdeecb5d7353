"""Moving learner state between flashsac_bench and other FlashSAC implementations."""
