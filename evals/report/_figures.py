"""Drawing a run's figures in worker processes, embedded as PNG or written as files, and the
stores that reuse a figure whose input is unchanged (beside the report, a lab's shared folder)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import multiprocessing
import os
import warnings
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from evals.errors import OutputError, why_not_writable
from evals.report._plans import (
    COST_FIGURE,
    CURVES_FIGURE,
    FigurePlan,
    question_figure_prefix,
    run_plans,
)
from evals.runs import Run, prepare_folder

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn: a report of kept figures draws none
    from matplotlib.figure import Figure

_DPI = 96
_FILE_DPI = 200
FigureFormat = Literal["pdf", "svg", "png"]
FIGURE_FORMATS: tuple[str, ...] = ("pdf", "svg", "png")
_DRAWING_VERSION = 5
"""Part of every figure's digest: bumped when the figures' drawing code changes."""
_IN_PROCESS_BELOW = 4
"""Fewer figures than this are drawn in this process (a pool costs a start-up)."""
SHARED_FIGURES_LIMIT = 256 * 1024 * 1024
"""The most a lab's shared figure folder keeps (bytes); the least recently used go first."""


@dataclass(frozen=True)
class EmbeddedFigure:
    name: str
    caption: str
    data_uri: str


@dataclass(frozen=True)
class FigureProblem:
    name: str
    message: str


@dataclass
class FigureSet:
    """The figures drawn (embedded, written) and the ones that could not be."""

    embedded: list[EmbeddedFigure]
    files: list[Path]
    problems: list[FigureProblem]
    reused: int = 0
    """Embedded figures read back from a store instead of drawn."""


def _png(figure: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from evals.plots import lay_out

    FigureCanvasAgg(figure)
    engine, dpi = figure.get_layout_engine(), figure.dpi
    lay_out(figure, _DPI)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, pil_kwargs={"compress_level": 3})
    figure.set_layout_engine(engine)  # a file of it is laid out again at its own resolution
    figure.set_dpi(dpi)
    return buffer.getvalue()


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


@dataclass(frozen=True)
class FigureStore:
    """A folder where a report keeps its figures as PNG, each beside the digest of its input
    (`digests`, by name), and optionally a lab's `shared` folder where each PNG is named by
    its digest alone (so a figure of another run with the same input is found there)."""

    folder: Path
    digests: Mapping[str, str]
    shared: Path | None = None

    def _shared_file(self, name: str) -> Path | None:
        digest = self.digests.get(name)
        return None if self.shared is None or digest is None else self.shared / f"{digest}.png"

    def read(self, name: str) -> bytes | None:
        """The kept PNG of a figure whose digest is unchanged (from the report's folder, else
        the shared one), else None."""
        png_file = self.folder / f"{name}.png"
        try:
            if png_file.with_suffix(".digest").read_text() == self.digests[name]:
                return png_file.read_bytes()
        except (OSError, KeyError):
            pass
        shared = self._shared_file(name)
        if shared is None:
            return None
        try:
            png = shared.read_bytes()
            os.utime(shared)  # recently used: pruned last
        except OSError:
            return None
        self._keep_here(name, png)
        return png

    def keep(self, name: str, png: bytes) -> None:
        """Keep a drawn PNG, here and in the shared folder (best effort)."""
        self._keep_here(name, png)
        shared = self._shared_file(name)
        if shared is None:
            return
        temporary = shared.with_name(f"{shared.stem}.{os.getpid()}.part")
        try:
            shared.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(png)
            temporary.replace(shared)  # whole or absent, whoever else writes the same figure
        except OSError:
            with suppress(OSError):
                temporary.unlink(missing_ok=True)

    def _keep_here(self, name: str, png: bytes) -> None:
        png_file = self.folder / f"{name}.png"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            png_file.write_bytes(png)
            png_file.with_suffix(".digest").write_text(self.digests[name])
        except (OSError, KeyError):
            pass

    def prune_shared(self, limit: int = SHARED_FIGURES_LIMIT) -> None:
        """Keep the shared folder within `limit` bytes, dropping the least recently used."""
        if self.shared is None:
            return
        try:
            files = [(f.stat(), f) for f in self.shared.glob("*.png")]
        except OSError:
            return
        total = sum(stat.st_size for stat, _ in files)
        for stat, path in sorted(files, key=lambda item: item[0].st_mtime):
            if total <= limit:
                break
            with suppress(OSError):
                path.unlink()
                total -= stat.st_size


def _frame_digest(frame: pd.DataFrame | None) -> str:
    if frame is None:
        return ""
    return hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()


def figure_digests(run: Run, plans: list[FigurePlan]) -> dict[str, str]:
    """What each figure is drawn from, hashed: a question's samples file and summary rows,
    the curves, costs.csv, or the summary and comparisons; and the groups, statistics, models
    and caption."""
    common = {
        "version": _DRAWING_VERSION,
        "groups": run.groups,
        "models": run.info.get("models", {}),
        "statistics": run.statistics,
    }
    summary = run.summary
    prefixes = {question_figure_prefix(run, name): name for name in run.questions}
    headline: str | None = None
    per_question: dict[str, str] = {}
    digests: dict[str, str] = {}
    for plan in plans:
        question = next((q for p, q in prefixes.items() if plan.name.startswith(p)), None)
        if question is not None:
            source = per_question.get(question)
            if source is None:
                entry = run.question_info(question)
                rows = summary[summary["question"].astype(str) == question]
                source = per_question[question] = json.dumps(
                    [
                        hashlib.sha256(samples.read_bytes()).hexdigest()
                        if (samples := run.path / entry["samples_file"]).is_file()
                        else "",
                        _frame_digest(rows),
                        {k: entry.get(k) for k in ("type", "scores", "judges", "scales")},
                    ],
                    default=str,
                )
        elif plan.name == CURVES_FIGURE:
            source = _frame_digest(run.training_curves())
        elif plan.name == COST_FIGURE:
            source = _frame_digest(run.costs())
        else:
            if headline is None:
                headline = _frame_digest(summary) + _frame_digest(run.comparisons)
            source = headline
        facts = {**common, "name": plan.name, "caption": plan.caption, "source": source}
        digests[plan.name] = hashlib.sha256(
            json.dumps(facts, sort_keys=True, default=str).encode()
        ).hexdigest()
    return digests


_PLANS: list[FigurePlan] = []
"""The plans the worker processes draw (inherited when they are forked)."""


@dataclass(frozen=True)
class _Drawn:
    png: bytes | None = None
    file: Path | None = None
    problem: FigureProblem | None = None
    failure: tuple[str, str | None] | None = None
    """An `OutputError` writing the file (message, hint), raised by the caller."""


def _draw_one(index: int, embed: bool, folder: Path | None, file_format: str) -> _Drawn:
    plan = _PLANS[index]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            figure = plan.draw()
            png = _png(figure) if embed else None
    except (ValueError, TypeError, KeyError) as error:
        return _Drawn(
            problem=FigureProblem(plan.name, f"{plan.caption.split(',')[0]}: not drawn ({error})")
        )
    path = None
    if folder is not None:
        try:
            path = _save(figure, folder / f"{plan.name}.{file_format}", file_format)
        except OutputError as error:
            return _Drawn(failure=(error.message, error.hint))
    return _Drawn(png, path)


def _draw_many(
    plans: list[FigurePlan],
    todo: list[int],
    embed: bool,
    folder: Path | None,
    file_format: str,
    processes: int | None,
) -> dict[int, _Drawn]:
    global _PLANS
    workers = min(processes or os.cpu_count() or 1, len(todo))
    _PLANS = plans
    try:
        methods = multiprocessing.get_all_start_methods()
        # The plans are closures over the run's frames: forked workers inherit them.
        if workers < 2 or len(todo) < _IN_PROCESS_BELOW or "fork" not in methods:
            return {i: _draw_one(i, embed, folder, file_format) for i in todo}
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {i: pool.submit(_draw_one, i, embed, folder, file_format) for i in todo}
            return {i: future.result() for i, future in futures.items()}
    finally:
        _PLANS = []


def draw_figures(
    plans: list[FigurePlan],
    *,
    embed: bool = True,
    folder: Path | None = None,
    file_format: FigureFormat = "pdf",
    store: FigureStore | None = None,
    processes: int | None = None,
) -> FigureSet:
    """Draw each plan once, in up to `processes` workers: embedded as PNG and/or written to
    `folder` as `<name>.<file_format>`. With a `store`, an embedded figure whose input is
    unchanged is read back instead of drawn. A figure that cannot be drawn is a problem,
    not an error."""
    kept: dict[int, bytes] = {}
    if store is not None and embed and folder is None:
        found = {i: store.read(plan.name) for i, plan in enumerate(plans)}
        kept = {i: png for i, png in found.items() if png is not None}
    todo = [i for i in range(len(plans)) if i not in kept]
    drawn = _draw_many(plans, todo, embed, folder, file_format, processes)
    result = FigureSet([], [], [], reused=len(kept))
    for i, plan in enumerate(plans):
        one = _Drawn(kept[i]) if i in kept else drawn[i]
        if one.failure is not None:
            raise OutputError(one.failure[0], hint=one.failure[1])
        if one.problem is not None:
            result.problems.append(one.problem)
            continue
        if one.png is not None:
            result.embedded.append(EmbeddedFigure(plan.name, plan.caption, _data_uri(one.png)))
            if store is not None and i not in kept:
                store.keep(plan.name, one.png)
        if one.file is not None:
            result.files.append(one.file)
    if store is not None and todo:
        store.prune_shared()
    return result


def _save(figure: Figure, path: Path, file_format: str) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    options: dict[str, Any] = {"dpi": _FILE_DPI} if file_format == "png" else {}
    try:
        figure.savefig(path, format=file_format, bbox_inches="tight", **options)
    except OSError as error:
        raise OutputError(
            f"cannot write the figure {path}: {why_not_writable(path, error)}.",
            hint="Give a folder you can write to with --figures.",
        ) from None
    return path


def prepare_figure_folder(folder: str | Path, file_format: str) -> Path:
    """The folder for figure files, created if missing; `OutputError` naming it otherwise."""
    if file_format not in FIGURE_FORMATS:
        raise OutputError(
            f"figure format {file_format!r} is not one of {', '.join(FIGURE_FORMATS)}.",
            hint="Use --format pdf, svg or png.",
        )
    return prepare_folder(folder, what="figure folder", option="--figures")


def write_figures(run: Run, folder: str | Path, *, file_format: FigureFormat = "pdf") -> FigureSet:
    """Every figure of `run` as a file in `folder` (`<name>.pdf|svg|png`), for a paper."""
    target = prepare_figure_folder(folder, file_format)
    return draw_figures(run_plans(run), embed=False, folder=target, file_format=file_format)
