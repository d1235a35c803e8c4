"""The leaderboard's page (grader.classroom.leaderboard): one HTML file, no script and no network
(its Content-Security-Policy forbids both), every text from a hand-in escaped, and per exercise a
PNG of the class's ratios against the course's ladder (matplotlib), embedded as data."""
from __future__ import annotations

import base64
import datetime
import html
import io

STYLE = """body{font-family:sans-serif;margin:2em;max-width:1100px} td,th{padding:3px 8px;text-align:left;
vertical-align:top} th{border-bottom:2px solid #999} tr:nth-child(even){background:#f4f6f8}
td.num{text-align:right;font-variant-numeric:tabular-nums} .muted{color:#555} .coach{font-size:0.9em}
img{max-width:100%} .counts li{margin:2px 0}"""
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def pct(ratio: float) -> str:
    """A speed as the page shows it, to 0.1 % of the library (leaderboard.rank ties on it)."""
    return f"{100 * ratio:.1f}%"


def _pct(x: float | None) -> str:
    return "" if x is None else pct(x)


def plot(board) -> str:
    """The class's ratios (a histogram) with the ladder's rungs as lines: base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    r = board.rungs
    fig = Figure(figsize=(10, 3), dpi=100)
    ax = fig.subplots()
    ratios = [100 * e.ratio for e in board.ranked]
    marks = [(r.floor, "floor (first speed point)", "#cf222e", "--"), (r.target, "target (all speed points)", "#1a7f37", "--"),
             (r.previous_ratio, f"previous lesson: {r.previous}", "#9a6700", ":"),
             (r.reference_ratio, f"course's solution: {r.reference}", "#0969da", ":")]
    top = max(ratios + [100 * m[0] for m in marks if m[0] is not None] + [1.0])
    if ratios:
        ax.hist(ratios, bins=40, range=(0, top * 1.05), color="#8c959f",
                label=f"the class ({len(ratios)} kernels)")
    else:
        ax.text(0.5, 0.5, "no kernel timed", transform=ax.transAxes, ha="center", color="#555")
    for x, label, color, style in marks:
        if x is not None:
            ax.axvline(100 * x, color=color, linestyle=style, linewidth=2, label=f"{label}: {100 * x:.0f}%")
    ax.set_xlim(0, top * 1.05)
    ax.set_xlabel(f"speed, % of {board.baseline}")
    ax.set_ylabel("kernels")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode()


def _board(b, names: bool) -> str:
    e_ = html.escape
    r = b.rungs
    ladder = [f"floor {_pct(r.floor)}, target {_pct(r.target)} (the exercise's speed points)"]
    if r.reference_ratio is not None:
        ladder.append(f"the course's solution ({e_(r.reference)}) {_pct(r.reference_ratio)}"
                      + (f", the previous lesson's kernel ({e_(r.previous)}) {_pct(r.previous_ratio)}"
                         if r.previous_ratio is not None else "") + f", recorded on {e_(r.recorded)}")
    counts = "".join(f"<li>{n} {e_(what)}{': ' + e_(why) if why else ''}</li>" for what, n, why in b.counts())
    rows = "".join(
        f"<tr><td class=num>{e.rank}</td><td>{e_(e.shown)}</td><td class=num><b>{_pct(e.ratio)}</b></td>"
        f"<td class=num>{'' if e.kernel_ms is None else f'{e.kernel_ms:.3f}'}</td>"
        f"<td class=num>{'' if e.baseline_ms is None else f'{e.baseline_ms:.3f}'}</td>"
        f"<td>{_standing(e.ratio, r)}</td><td class=coach>{e_(e.coach)}</td></tr>" for e in b.ranked)
    table = (f"<table><tr><th>#</th><th>{'student' if names else 'pseudonym'}</th><th>speed vs {e_(b.baseline)}</th>"
             f"<th>kernel ms</th><th>baseline ms</th><th>on the ladder</th><th>what holds it back (coach)</th>"
             f"</tr>{rows}</table>" if b.ranked else "<p class=muted>No kernel of this exercise was timed: speed is "
             "measured when autograde runs on a GPU.</p>")
    return (f"<section><h2>{e_(b.title)} <span class=muted>(<code>{e_(b.exercise)}</code>)</span></h2>"
            f"<p>{len(b.ranked)} kernels ranked, fastest first, by speed as a share of {e_(b.baseline)}'s. "
            f"Ladder: {'; '.join(ladder)}.</p>"
            + (f"<p>Counted, not ranked:</p><ul class=counts>{counts}</ul>" if counts else "")
            + f"<img alt='distribution of the class's speed ratios for {e_(b.exercise)}' "
              f"src='data:image/png;base64,{plot(b)}'>{table}</section>")


def _standing(ratio: float, r) -> str:
    if r.target is not None and ratio >= r.target:
        return "at or above target"
    if r.floor is not None and ratio >= r.floor:
        return "between floor and target"
    return "below floor"


def render(assignment: str, boards: list, n_students: int, *, names: bool = False) -> str:
    e_ = html.escape
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    who = ("Student ids shown (--names)." if names else
           "Names are pseudonyms, the same every time for this course (its key: .tc-pseudonym-key).")
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            f"<title>Leaderboard: {e_(assignment)}</title><style>{STYLE}</style></head><body>"
            f"<h1>Leaderboard: {e_(assignment)}</h1>"
            f"<p class=muted>{n_students} students in the course; made {now} from the trusted grader's verdicts "
            f"(autograde). {who} A kernel is ranked once it is correct and was timed on a GPU.</p>"
            + "".join(_board(b, names) for b in boards) + "</body></html>\n")
