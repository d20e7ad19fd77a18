"""Human labels: export a sample of a run's answers for people to label (or label them in the
browser), and import their labels back, so the run shows how far its judges agree with people.

from evals.labels import export_labels, import_labels, start_label_server
export_labels("runs/…", n=200, by="group", blind=True, seed=1)   # → runs/…/labels-1.csv
import_labels("runs/…", "labels-1.csv")       # → human_labels.csv, agreement.csv, report
server = start_label_server("runs/…", labeller="ana")   # → runs/…/labels/ana.jsonl
server.serve_forever()                        # the page at server.url, until shutdown()
"""

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
