"""The env contract: what every env is (`api`) and what every task offers (`task`)."""
