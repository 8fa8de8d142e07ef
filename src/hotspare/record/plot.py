"""``hotspare postmortem RUN --plot FILE``: a picture of a run.

Two panels on one clock (seconds since the run started). Above, one row per host of the allocation:
when it ran the job, waited as a spare, or was out (quarantined); each attempt is a shaded band named
by how it ended, the fault (the failed attempt's last progress) a red mark on the hosts the decision
evicted, and each decision a numbered line explained in the legend below. Underneath, the training
step over time per attempt, with the checkpoints it wrote: the work a failure threw away is the
stretch of an attempt's line above the step the next attempt starts from.

matplotlib is optional (``pip install 'hotspare[plot]'``); it is imported only when a plot is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotspare.errors import InputError
from hotspare.record.ledger import CHECKPOINT, PROGRESS, AttemptRow, DecisionRow
from hotspare.record.postmortem import Report

#: File types a plot can be written as.
FORMATS = (".png", ".svg")

_COLOURS = {"active": "#2e7d32", "spare": "#90caf9", "out": "#c62828"}
_ATTEMPT_SHADES = ("#f5f5f5", "#e8eaf6")


@dataclass(frozen=True, slots=True)
class _Segment:
    host: str
    start: float
    end: float
    state: str


def draw(report: Report, path: str | Path) -> Path:
    """Draw ``report`` to ``path`` (``.png`` or ``.svg``); returns the path written."""
    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise InputError(str(out), f"a plot is written as {' or '.join(FORMATS)}")
    if not report.attempts:
        raise InputError(str(out), "the run has no attempt to draw")
    try:
        import matplotlib as mpl  # noqa: PLC0415 -- optional: only a plot needs it

        mpl.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError as exc:
        raise InputError("--plot", "needs matplotlib: pip install 'hotspare[plot]'") from exc
    hosts = _hosts(report)
    fig, (top, bottom) = plt.subplots(
        2, 1, sharex=True, figsize=(11, 3.2 + 0.32 * len(hosts) + 0.22 * len(report.decisions)),
        gridspec_kw={"height_ratios": [max(1.2, 0.32 * len(hosts)), 2.2]})
    t0 = report.started_s
    _attempt_bands(top, bottom, report, t0)
    _host_rows(top, report, hosts, t0)
    _faults(top, bottom, report, hosts, t0)
    _progress(bottom, report, t0)
    _decision_lines(top, bottom, report, t0)
    top.set_title(_title(report), loc="left", fontsize=11, pad=16)
    fig.legend(handles=[_patch(colour, state) for state, colour in _COLOURS.items()], loc="lower right",
               fontsize=8, ncols=3, framealpha=0.9)
    bottom.set_xlabel("seconds since the run started")
    legend = _decision_legend(report, t0)
    if legend:
        fig.text(0.01, 0.005, legend, family="monospace", fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.05 + 0.03 * len(report.decisions), 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _hosts(report: Report) -> list[str]:
    """The allocation's hosts in order (hosts an attempt used that the configuration did not list last)."""
    seen = dict.fromkeys(report.allocation)
    for a in report.attempts:
        seen.update(dict.fromkeys((*a.hosts, *a.spares)))
    return list(seen)


def _end(a: AttemptRow, report: Report) -> float:
    return a.ended_s if a.ended_s is not None else report.started_s + report.goodput.wall_s


def _segments(report: Report, hosts: list[str]) -> list[_Segment]:
    """Each host's state over time: active or spare as each attempt listed it, out otherwise; hosts a
    decision swapped out are out from the decision on."""
    decided = {d.attempt: d for d in report.decisions}
    found = []
    for index, a in enumerate(report.attempts):
        nxt = report.attempts[index + 1].started_s if index + 1 < len(report.attempts) else _end(a, report)
        decision = decided.get(a.number)
        cut = min(decision.at_s, nxt) if decision is not None else nxt
        evicted = set(decision.hosts) if decision is not None else set()
        for host in hosts:
            state = "active" if host in a.hosts else "spare" if host in a.spares else "out"
            found.append(_Segment(host, a.started_s, cut, state))
            if cut < nxt:
                found.append(_Segment(host, cut, nxt, "out" if host in evicted else state))
    return found


def _host_rows(ax: Any, report: Report, hosts: list[str], t0: float) -> None:
    rows = {h: i for i, h in enumerate(hosts)}
    for state, colour in _COLOURS.items():
        for seg in (s for s in _segments(report, hosts) if s.state == state):
            ax.broken_barh([(seg.start - t0, seg.end - seg.start)], (rows[seg.host] - 0.35, 0.7),
                           facecolors=colour, hatch="//" if state == "out" else None,
                           edgecolor="white" if state != "out" else "#ffcdd2", linewidth=0.5)
    ax.set_yticks(range(len(hosts)), hosts, fontsize=8)
    ax.set_ylim(len(hosts) - 0.5, -0.5)


def _patch(colour: str, label: str) -> Any:
    from matplotlib.patches import Patch  # noqa: PLC0415

    names = {"active": "running the job", "spare": "spare", "out": "out (quarantined)"}
    return Patch(facecolor=colour, label=names[label], hatch="//" if label == "out" else None)


def _attempt_bands(top: Any, bottom: Any, report: Report, t0: float) -> None:
    for index, a in enumerate(report.attempts):
        shade = _ATTEMPT_SHADES[index % 2]
        for ax in (top, bottom):
            ax.axvspan(a.started_s - t0, _end(a, report) - t0, color=shade, zorder=0)
        ended = a.failure_class or "running"
        bottom.text(a.started_s - t0, 1.0, f" attempt {a.number}: {ended}", transform=bottom.get_xaxis_transform(),
                    va="top", fontsize=8, color="#424242")


def _faults(top: Any, bottom: Any, report: Report, hosts: list[str], t0: float) -> None:
    """A red mark where each failed attempt last made progress, on the hosts its decision evicted."""
    rows = {h: i for i, h in enumerate(hosts)}
    evicted = {d.attempt: d.hosts for d in report.decisions}
    for incident in report.incidents:
        if incident.last_progress_at_s is None:
            continue
        at = incident.last_progress_at_s
        bottom.axvline(at, color="#c62828", linewidth=1.2, linestyle="-", zorder=3)
        for host in evicted.get(incident.attempt, ()):
            if host in rows:
                top.plot([at], [rows[host]], marker="X", color="#b71c1c", markersize=11, zorder=4,
                         markeredgecolor="white")
        bottom.text(at, 0.9, f"fault: {incident.died_of} ", transform=bottom.get_xaxis_transform(), rotation=90,
                    va="top", ha="right", fontsize=8, color="#c62828")
        if incident.recover_s is not None:
            y = 0.12
            bottom.annotate("", xy=(at + incident.recover_s, y), xytext=(at, y),
                            xycoords=bottom.get_xaxis_transform(), textcoords=bottom.get_xaxis_transform(),
                            arrowprops={"arrowstyle": "<->", "color": "#c62828"})
            bottom.text(at + incident.recover_s / 2, y + 0.02, f"recovered in {incident.recover_s:.1f} s",
                        transform=bottom.get_xaxis_transform(), ha="center", va="bottom", fontsize=8,
                        color="#c62828")


def _progress(ax: Any, report: Report, t0: float) -> None:
    marks = [m for m in report.timeline if m.step is not None]
    for a in report.attempts:
        steps = [(m.at_s - t0, m.step) for m in marks if m.attempt == a.number and m.kind == PROGRESS]
        if steps:
            ax.plot(*zip(*steps, strict=True), color="#1565c0", linewidth=1.6, marker=".", markersize=3,
                    label="training step" if a is report.attempts[0] else None)
    saved = [(m.at_s - t0, m.step) for m in marks if m.kind == CHECKPOINT]
    if saved:
        ax.plot(*zip(*saved, strict=True), linestyle="none", marker="D", color="#ef6c00", markersize=6,
                label="checkpoint written", zorder=5)
    ax.set_ylabel("step")
    ax.grid(axis="y", alpha=0.3)
    if marks:
        ax.legend(loc="lower right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no progress recorded", transform=ax.transAxes, ha="center", color="#757575")


def _decision_lines(top: Any, bottom: Any, report: Report, t0: float) -> None:
    for n, d in enumerate(report.decisions, 1):
        for ax in (top, bottom):
            ax.axvline(d.at_s - t0, color="#6a1b9a", linestyle="--", linewidth=1, zorder=3)
        top.text(d.at_s - t0, -0.5, f"D{n}", color="#6a1b9a", fontsize=9, ha="center", va="bottom",
                 fontweight="bold")


def _decision_legend(report: Report, t0: float) -> str:
    return "\n".join(_decision_line(n, d, t0) for n, d in enumerate(report.decisions, 1))


def _decision_line(n: int, d: DecisionRow, t0: float) -> str:
    out = f" {', '.join(d.hosts)} out ({d.quarantine_reason})" if d.hosts else ""
    reason = d.reason if len(d.reason) <= 90 else d.reason[:87] + "..."
    return f"D{n} +{d.at_s - t0:.1f} s  attempt {d.attempt}: {d.action}{out}: {reason}"


def _title(report: Report) -> str:
    g = report.goodput
    recovered = [i.recover_s for i in report.incidents if i.recover_s is not None]
    rec = f"; recovered in {', '.join(f'{r:.1f} s' for r in recovered)}" if recovered else ""
    return (f"run {report.state} (exit {report.exit_code}): {len(report.attempts)} attempt(s), "
            f"goodput {100 * g.ettr:.0f} % of {g.wall_s:.1f} s{rec}")
