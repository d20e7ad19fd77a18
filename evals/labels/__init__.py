"""Human labels: export a sample of a run's answers for people to label, and import their
labels back, so the run shows how far its judges agree with people.

from evals.labels import export_labels, import_labels
export_labels("runs/…", n=200, by="group", blind=True, seed=1)   # → runs/…/labels-1.csv
import_labels("runs/…", "labels-1.csv")       # → human_labels.csv, agreement.csv, report

Answers are untrusted text: a CSV cell that a spreadsheet would read as a formula is written
with a leading `'`, and reading undoes exactly that (`neutralise`, `restore`).
"""

from evals.errors import LabelsFileError
from evals.labels._cells import neutralise, restore
from evals.labels._export import LabelExport, LabelFormat, export_labels
from evals.labels._import import LabelImport, import_labels

__all__ = [
    "LabelExport",
    "LabelFormat",
    "LabelImport",
    "LabelsFileError",
    "export_labels",
    "import_labels",
    "neutralise",
    "restore",
]
