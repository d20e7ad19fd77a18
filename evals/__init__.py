"""evals: questions asked of model groups, cached runs, statistics, figures and reports."""

__all__: list[str] = []
