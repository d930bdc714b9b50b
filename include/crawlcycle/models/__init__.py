"""The per-cycle models: link graph walks, prestige and improvability regressions, S'(p, q)."""
