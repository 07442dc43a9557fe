"""Pictures (issue 12): eval --plot and info --plot render real files; without matplotlib
the command says which extra to install, in one line."""

import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, one_line_error, run

MAIL = ROOT / "corpora" / "mail"


def test_eval_and_info_draw_png_and_svg(demo_model, tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install '.[plot]')")
    png, svg = tmp_path / "report.png", tmp_path / "tokens.svg"
    result = run("eval", "-m", demo_model, "--plot", png, MAIL / "test" / "spam", MAIL / "test" / "ham")
    assert result.exit_code == 0 and result.stdout.startswith("documents\t"), result.stderr
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 10_000
    assert run("info", "-m", demo_model, "--plot", svg, "--top", "5").exit_code == 0
    drawing = svg.read_text()
    assert drawing.lstrip().startswith("<?xml") and "<svg" in drawing and "</svg>" in drawing
    # the tokens drawn are the model's most indicative ones (as `info --top` lists them)
    top = run("info", "-m", demo_model, "--top", "5", "--format", "json").stdout
    tokens = [token for token, _ in json.loads(top)["top"]["spam"]]
    assert all(f">{token}<" in drawing for token in tokens)  # text kept as text in an SVG


def test_plot_errors_are_one_line(demo_model, tmp_path, monkeypatch):
    spam, ham = MAIL / "test" / "spam", MAIL / "test" / "ham"
    one_line_error(run("eval", "-m", demo_model, "--plot", tmp_path / "r.gif", spam, ham), "a .png, .svg or .pdf file")
    one_line_error(
        run("eval", "-m", demo_model, "--plot", tmp_path / "nowhere" / "r.png", spam, ham), "does not exist"
    )  # before any work (it computed the report, then failed)
    one_line_error(run("eval", "--folds", "2", "--plot", tmp_path / "r.png", spam, ham), "does not go with --folds")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the extra were not installed
    one_line_error(
        run("info", "-m", demo_model, "--plot", tmp_path / "t.png"),
        "--plot needs the plot extra: pip install 'nbtext[plot]'",
    )
    assert not (tmp_path / "t.png").exists() and not (tmp_path / "r.gif").exists()
    drawn = run("eval", "-m", demo_model, "--plot", tmp_path / "r.png", spam, ham)  # before any work, as info
    assert drawn.exit_code == 1 and drawn.stdout == ""  # (it evaluated the whole corpus, then said it)
    assert drawn.stderr == "Error: --plot needs the plot extra: pip install 'nbtext[plot]'\n"


def test_eval_draws_a_pdf_and_says_where(demo_model, tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install '.[plot]')")
    pdf = tmp_path / "report.pdf"
    result = run("eval", "-m", demo_model, "--plot", pdf, MAIL / "test" / "spam", MAIL / "test" / "ham")
    assert result.exit_code == 0 and result.stderr == f"nbtext: the picture is in {pdf}\n"
    assert pdf.read_bytes().startswith(b"%PDF")


def test_the_pictures_say_what_their_readers_need(demo_model, tmp_path):
    """Two classes: the ROC's false-positive axis is logarithmic with the model's decision
    marked, the confusion matrix shows shares of the true class, the reliability bins say
    how many documents they hold. info: one scale for all classes, labelled in plain words."""
    pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install '.[plot]')")
    report, tokens = tmp_path / "report.svg", tmp_path / "tokens.svg"
    assert run("eval", "-m", demo_model, "--plot", report, MAIL / "test" / "spam", MAIL / "test" / "ham").exit_code == 0
    drawing = report.read_text()
    for text in (
        "share of ham taken for spam (log scale)",
        "its decision",
        "share of the true class",
        ">documents<",
        "probability of the winning class",
    ):
        assert text in drawing, text
    assert run("info", "-m", demo_model, "--plot", tokens, "--top", "5").exit_code == 0
    assert tokens.read_text().count("times more often in this class than in the others") == 1


def test_a_twenty_class_matrix_grows_and_keeps_its_numbers(tmp_path):
    """At 20 classes the matrix is drawn larger, its cells' shares written in it."""
    pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install '.[plot]')")
    import re

    classes = [f"class{k:02d}" for k in range(20)]
    for k, label in enumerate(classes):
        folder = tmp_path / "corpus" / label
        folder.mkdir(parents=True)
        for i in range(6):
            (folder / f"{i}.txt").write_text(f"word{k} token{k} shared{i % 3} other{(k + i) % 20}")
    model, picture = tmp_path / "m.model", tmp_path / "report.svg"
    folders = [tmp_path / "corpus" / label for label in classes]
    assert run("train", "-o", model, *folders).exit_code == 0
    assert run("eval", "-m", model, "--plot", picture, *folders).exit_code == 0
    drawing = picture.read_text()
    width = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', drawing).group(1))
    assert width > 900  # the matrix's side grows with the classes (two classes: about 700)
    assert all(f">{label}<" in drawing for label in classes)
    assert len(re.findall(r">\d+%<", drawing)) >= 20  # at least the diagonal's shares


def test_the_decision_drawn_is_the_one_reported(demo_model, tmp_path):
    """The ROC's marked decision is the report's: its share of ham taken for spam is the
    confusion matrix's (a tie of log-odds 0 goes to the first class, as the report's)."""
    pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install '.[plot]')")
    import re

    picture = tmp_path / "report.svg"
    result = run(
        "eval", "-m", demo_model, "--format", "json", "--plot", picture, MAIL / "test" / "spam", MAIL / "test" / "ham"
    )
    (ham_taken,) = re.findall(r"its decision: ([\d.]+)% of ham taken", picture.read_text())
    confusion = json.loads(result.stdout)["confusion"]  # rows and columns: ham, spam
    assert float(ham_taken) == pytest.approx(100 * confusion[0][1] / sum(confusion[0]), abs=0.005)


def drawn_info(summary, tmp_path, monkeypatch, name="tokens.png"):
    """(the figure info_plot drew for `summary`, how many times it was drawn, how many
    times a text's extent was measured, its texts)."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from nbtext.report import plots

    counts, kept = {"draw": 0, "extent": 0}, {}
    draw, extent, save = Figure.draw, Text.get_window_extent, plots._save

    def counted_draw(self, *args, **kwargs):
        counts["draw"] += 1
        return draw(self, *args, **kwargs)

    def counted_extent(self, *args, **kwargs):
        counts["extent"] += 1
        return extent(self, *args, **kwargs)

    def keep(figure, path, **options):
        kept["figure"] = figure
        save(figure, path, **options)

    monkeypatch.setattr(Figure, "draw", counted_draw)
    monkeypatch.setattr(Text, "get_window_extent", counted_extent)
    monkeypatch.setattr(plots, "_save", keep)
    plots.info_plot(summary, tmp_path / name)
    monkeypatch.undo()
    figure = kept["figure"]
    return figure, counts["draw"], counts["extent"], figure.findobj(Text)


def indicative(classes, per_class, length):
    return {
        "top": {
            f"class{k:02d}": [(f"{'w' * (length - 3)}{k:02d}{i}", 9.0 - 0.3 * i) for i in range(per_class)]
            for k in range(classes)
        }
    }


def test_info_of_twenty_classes_is_drawn_once(tmp_path, monkeypatch):
    """info --plot of 20 Newsgroups took 12.5 s, most of it laying itself out: tight_layout
    and the save's tight box each measured every text of 20 panels (and the thousands of
    log-scale minor ticks) before the one drawing that counts. Now: one drawing, each text
    measured about once (docs/performance.md has the times)."""
    pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install '.[plot]')")
    figure, draws, extents, texts = drawn_info(indicative(20, 15, 12), tmp_path, monkeypatch)
    assert draws == 1 and extents <= 2 * len(texts)
    assert len(figure.axes) == 20 and sum(len(axis.get_xticks(minor=True)) for axis in figure.axes) == 0


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 9), st.integers(1, 20), st.integers(3, 40))
def test_the_tokens_of_a_panel_stay_clear_of_the_panel_beside_it(tmp_path, monkeypatch, classes, per_class, length):
    """The grid is laid out before drawing, from the widest token measured: every token's
    text ends left of its panel and starts right of the panel to its left (and inside the
    picture), whatever the classes and the tokens' lengths."""
    pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install '.[plot]')")
    summary = indicative(classes, per_class, length)
    figure, _, _, texts = drawn_info(summary, tmp_path, monkeypatch)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()  # (closed, the figure lost its own canvas)
    panels = [axis for axis in figure.axes if axis.get_visible()]
    columns = min(classes, 4)
    for i, (axis, tokens) in enumerate(zip(panels, summary["top"].values())):
        box = axis.get_window_extent(renderer)
        left = panels[i - 1].get_window_extent(renderer).x1 if i % columns else 0.0
        names = {token for token, _ in tokens}
        drawn = [t.get_window_extent(renderer) for t in texts if t.get_text() in names and t.get_visible()]
        assert len(drawn) == per_class
        assert all(left < t.x0 and t.x1 <= box.x0 for t in drawn), (i, left, box, drawn[0])
