"""Figures of training curves (seaborn, matplotlib `Figure`s without pyplot): one job's metrics,
or a group's seeds overlaid; a panel per metric family."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from labmgr.errors import LabmgrError
from labmgr.finetuning.curves.frame import CURVE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

_FAMILIES = (("loss", "loss"), ("accuracy", "accuracy (0–1)"), ("reward", "reward"))
_PALETTE = "colorblind"


def _panels(metrics: list[str]) -> list[tuple[str, list[str]]]:
    """(y label, metric columns): loss, accuracy, reward, then each other metric alone."""
    panels: list[tuple[str, list[str]]] = []
    used: set[str] = set()
    for needle, label in _FAMILIES:
        members = [m for m in metrics if needle in m and m not in used]
        if members:
            panels.append((label, members))
            used.update(members)
    panels += [(m.replace("_", " "), [m]) for m in metrics if m not in used]
    return panels


def _metrics(frame: pd.DataFrame) -> list[str]:
    return [
        column
        for column in frame.columns
        if column not in CURVE_COLUMNS and frame[column].notna().any()
    ]


def _scale(ax: Any, label: str, values: Any) -> None:
    ax.set_xlabel("step")
    ax.set_ylabel(label)
    top = float(values.max()) if len(values) else 1.0
    if "accuracy" in label:
        ax.set_ylim(0, 1)
    elif "loss" in label:
        ax.set_ylim(0, max(top * 1.05, 1e-6))
    ax.set_xlim(left=0)


def _new_figure(panels: int) -> tuple[Figure, list[Any]]:
    import seaborn as sns
    from matplotlib.figure import Figure

    with sns.axes_style("whitegrid"), sns.plotting_context("notebook", font_scale=0.9):
        figure = Figure(figsize=(5.2 * panels, 4.0), layout="constrained")
        axes = figure.subplots(1, panels, squeeze=False)[0]
    return figure, list(axes)


def job_curves_figure(frame: pd.DataFrame, title: str) -> Figure:
    """One job's curves: a panel per metric family, train solid and validation dashed."""
    import seaborn as sns

    metrics = _metrics(frame)
    if not metrics:
        raise LabmgrError(f"{title}: the results file holds no metric values to draw.")
    panels = _panels(metrics)
    figure, axes = _new_figure(len(panels))
    colours = sns.color_palette(_PALETTE, max(len(metrics), 1))
    colour_of = dict(zip(metrics, colours, strict=False))
    for ax, (label, members) in zip(axes, panels, strict=True):
        values = frame[members].stack()
        for metric in members:
            series = frame[["step", metric]].dropna()
            sparse = len(series) < len(frame) * 0.5
            ax.plot(
                series["step"],
                series[metric],
                label=metric,
                color=colour_of[metric],
                linestyle="--" if metric.startswith(("valid", "full_valid")) else "-",
                marker="o" if sparse else None,
                markersize=3.5,
                linewidth=1.4,
            )
        _scale(ax, label, values)
        ax.legend(loc="best", fontsize="small")
    figure.suptitle(title)
    return figure


def group_curves_figure(frame: pd.DataFrame, title: str) -> Figure:
    """Seeds of each group overlaid: a panel per metric, a colour per group, a line per job."""
    import seaborn as sns

    metrics = _metrics(frame)
    if not metrics:
        raise LabmgrError(f"{title}: the results files hold no metric values to draw.")
    figure, axes = _new_figure(len(metrics))
    groups = sorted(frame["group"].astype(str).unique())
    palette = dict(zip(groups, sns.color_palette(_PALETTE, len(groups)), strict=True))
    for index, (ax, metric) in enumerate(zip(axes, metrics, strict=True)):
        data = frame[["group", "job_id", "step", metric]].dropna()
        sns.lineplot(
            data=data,
            x="step",
            y=metric,
            hue="group",
            hue_order=groups,
            units="job_id",
            estimator=None,
            palette=palette,
            linewidth=1.1,
            alpha=0.85,
            marker="o" if len(data) < len(frame) * 0.5 else None,
            markersize=3,
            ax=ax,
            legend=index == 0,
        )
        family = next((label for needle, label in _FAMILIES if needle in metric), metric)
        _scale(ax, family if family != metric else metric.replace("_", " "), data[metric])
        ax.set_title(metric.replace("_", " "))
        if index == 0 and ax.get_legend() is not None:
            ax.get_legend().set_title("group (one line per seed)")
    figure.suptitle(title)
    return figure


def save_figure(figure: Figure, out: str | Path) -> Path:
    """Write `figure` to `out` (the format follows the suffix: .png, .pdf, .svg)."""
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=150)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise LabmgrError(
            f"Cannot write the figure to {path}: {reason}.",
            hint="Choose a writable path ending in .png, .pdf or .svg (--out).",
        ) from None
    return path
