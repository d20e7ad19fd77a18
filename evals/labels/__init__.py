"""Human labels (docs/labelling.md): export a sample of a run's answers for people to label,
or label them in the browser, and import the labels so the run shows how judges agree."""

from evals.errors import LabelsFileError
from evals.labels._export import LabelExport, LabelFormat, export_labels, neutralise, restore
from evals.labels._import import LabelImport, import_labels
from evals.labels._log import LABELS_DIR, LabelLog
from evals.labels._server import (
    LabelServer,
    LabelSession,
    digit_values,
    open_session,
    start_label_server,
)

__all__ = [
    "LABELS_DIR",
    "LabelExport",
    "LabelFormat",
    "LabelImport",
    "LabelLog",
    "LabelServer",
    "LabelSession",
    "LabelsFileError",
    "digit_values",
    "export_labels",
    "import_labels",
    "neutralise",
    "open_session",
    "restore",
    "start_label_server",
]
