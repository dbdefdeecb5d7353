"""The test suite, a package so that its fakes import by name (`tests.fakes`), also in the env
worker processes it spawns (they get the parent's sys.path, which holds the repository root)."""
