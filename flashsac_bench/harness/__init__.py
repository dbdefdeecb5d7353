"""Reusable pieces of the validation and benchmark scripts (scripts/ holds thin CLIs)."""
