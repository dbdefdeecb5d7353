class ConfigError(ValueError):
    """A configuration that cannot run. Raised before any env or learner is built."""
