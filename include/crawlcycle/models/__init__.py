"""The per-cycle models: link graph walks, prestige and improvability regressions, S'(p, q)."""

# What the fits import on first use (scikit-learn, SciPy: seconds per process, in the stage that fits first). A
# process that forks the task processes imports them once for all (crawlcycle.airflow.preload).
FIT_MODULES = ("scipy.special", "sklearn.ensemble", "sklearn.linear_model", "sklearn.model_selection",
               "sklearn.preprocessing", "sklearn.tree")
