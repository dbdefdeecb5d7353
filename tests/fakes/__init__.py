"""Fakes and helpers shared by the test folders: small envs with the env contract
(`fake_env`, `sharded_env`), tiny run configs and CLI runs (`runs`), and checks that what a test
started is gone (`processes`)."""
