"""The HTML report's plots, drawn with matplotlib (Agg) and returned as
inline SVG text. No student text goes into a plot."""

from __future__ import annotations

import io


def _svg(fig) -> str:
    import matplotlib.pyplot as plt
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.find("<svg"):]


def _figure(width: float = 5.5, height: float = 2.8):
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, and selectable
    return plt.subplots(figsize=(width, height))


def score_histogram(scores: list[float], maximum: float | None) -> str | None:
    if not scores:
        return None
    fig, ax = _figure()
    top = maximum or max(scores) or 1.0
    ax.hist(scores, bins=min(20, max(5, len(scores))), range=(0, top), color="#4c72b0", edgecolor="white")
    ax.set_xlabel("score")
    ax.set_ylabel("submissions")
    ax.set_title("score distribution")
    return _svg(fig)


def distribution(values: list[float], lines: dict[str, float], label: str, title: str,
                 log: bool = False) -> str | None:
    """A strip of one dot per submission with the baselines as vertical lines."""
    if not values:
        return None
    import random
    fig, ax = _figure(height=2.4)
    rng = random.Random(0)
    ax.scatter(values, [rng.uniform(-0.3, 0.3) for _ in values], s=18, alpha=0.7, color="#4c72b0",
               label="submissions")
    colors = ["#c44e52", "#55a868", "#8172b2", "#ccb974"]
    for (name, value), color in zip(sorted(lines.items()), colors * 3):
        ax.axvline(value, color=color, linestyle="--", linewidth=1.2, label=f"{name} ({value:.3g})")
    if log:
        from matplotlib.ticker import FormatStrFormatter
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set_yticks([])
    ax.set_ylim(-1, 1)
    ax.set_xlabel(label)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.8)
    return _svg(fig)
