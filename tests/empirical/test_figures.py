"""What people look at: each run's figure and labelled results.json, `python -m empirical plot`, and its errors."""

import json

import matplotlib.image
import pytest

from empirical.__main__ import main
from empirical.run import RunSettings, load_results, run_experiment

TINY = dict(model="tiny-gpt2", weights="random", prompts=2, length=8, device="cpu")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished tiny runs of different depths (2 and 3 passes, with and without FFN)."""
    root = tmp_path_factory.mktemp("runs")
    run_experiment(RunSettings(passes=2, **TINY), root / "a", progress=False)
    run_experiment(RunSettings(passes=3, ffn=False, **TINY), root / "b", progress=False)
    return root


def test_a_run_writes_its_figure_beside_results(runs):
    manifest, _ = load_results(runs / "a")
    image = matplotlib.image.imread(runs / "a" / manifest["figure"])
    assert manifest["figure"] == "E.png" and image.shape[0] > 200 and image.shape[1] > 400


def test_the_band_below_the_floor_is_shaded_and_labelled(runs, monkeypatch, tmp_path):
    """Values under the floor are drawn at the axis' bottom: a flat line there must read as rounding, not a stall."""
    from empirical import figures

    drawn = []
    monkeypatch.setattr(figures, "_save", lambda figure, path, title: drawn.append(figure) or path)
    manifest, results = load_results(runs / "a")
    figures.plot_run(manifest, results, tmp_path / "E.png")
    axis = drawn[0].axes[0]
    labels = axis.get_legend_handles_labels()[1]
    assert any(label.startswith("below the floor") for label in labels), labels
    assert axis.get_ylim()[0] == manifest["floor"]["E_floor"] / figures.BELOW_FLOOR


def test_results_label_every_value_with_its_pass_and_block(runs):
    _, results = load_results(runs / "b")
    layers, passes = results["layers"], results["passes"]
    assert len(results["pass"]) == len(results["block"]) == len(results["E_mean"]) == passes * layers + 1
    assert (results["pass"][0], results["block"][0]) == (0, 0)  # the embeddings
    assert results["pass"][1:layers + 1] == [1] * layers and results["block"][1:layers + 1] == list(range(1, layers + 1))
    assert results["pass_end_index"] == [k * layers for k in range(passes + 1)]
    assert results["E_pass_end"] == [results["E_mean"][i] for i in results["pass_end_index"]]
    assert results["schema_version"] == 1 and results["decision"]["passes_run"] == passes
    assert results["E_floor"] > 0


def test_plot_overlays_runs(runs, tmp_path, capsys):
    assert main(["plot", str(runs / "a"), str(runs / "b"), "--out", str(tmp_path / "both.png")]) == 0
    assert str(tmp_path / "both.png") in capsys.readouterr().out
    assert matplotlib.image.imread(tmp_path / "both.png").shape[1] > 400


def _truncate(path):
    path.write_text(path.read_text()[:50])


def _short_rows(path):
    data = json.loads(path.read_text())
    data["E"] = [row[:-1] for row in data["E"]]
    path.write_text(json.dumps(data))


BAD = [pytest.param(lambda f: None, "missing", "is not a folder", id="no-folder"),
       pytest.param(lambda f: (f / "manifest.json").unlink(), "", "has no manifest.json: it is not a run folder",
                    id="no-manifest"),
       pytest.param(lambda f: _truncate(f / "results.json"), "results.json", "cannot be read as JSON",
                    id="truncated-results"),
       pytest.param(lambda f: _short_rows(f / "results.json"), "results.json", "passes x layers + 1",
                    id="short-rows")]


@pytest.mark.parametrize("damage,file,message", BAD)
def test_bad_run_folders_are_refused_in_one_line_naming_the_file(runs, tmp_path, capsys, damage, file, message):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(runs / "a", folder)
    if file == "missing":
        shutil.rmtree(folder)
    damage(folder)
    assert main(["plot", str(folder), "--out", str(tmp_path / "x.png")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error
    assert str(folder if file == "missing" else folder / file) in error
    assert not (tmp_path / "x.png").exists()
