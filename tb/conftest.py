"""Shared pytest settings: every simulation prints its seed (see sim.harness)."""
