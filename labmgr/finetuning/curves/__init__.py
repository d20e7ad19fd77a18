"""Training curves: each job's results file, read once, as a table and as figures."""

from labmgr.finetuning.curves.frame import NoCurves, training_curves
from labmgr.finetuning.curves.plots import group_curves_figure, job_curves_figure, save_figure
from labmgr.finetuning.curves.results_file import ResultsFileError, parse_results_file

__all__ = [
    "NoCurves",
    "ResultsFileError",
    "group_curves_figure",
    "job_curves_figure",
    "parse_results_file",
    "save_figure",
    "training_curves",
]
