class ConfigError(ValueError):
    """A configuration that cannot run. Raised before any env or learner is built."""

    # How the CLI introduces the message (flashsac_bench.cli.errors): one line, exit status 2.
    label = "invalid configuration"
