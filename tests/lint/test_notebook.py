"""Notebooks: code cells linted as one program, magics blanked, findings mapped to cell and line."""

from __future__ import annotations

import json
import subprocess
import sys

CELLS = [
    {"cell_type": "markdown", "source": ["# Training\n"]},
    {"cell_type": "code", "source": ["%matplotlib inline\n", "!pip install tqdm\n", "import torch\n",
                                     "model = torch.nn.Linear(2, 2)\n",
                                     "opt = torch.optim.SGD(model.parameters(), lr=0.1)"]},
    {"cell_type": "code", "source": ["%%bash\n", "echo this is not python\n"]},
    {"cell_type": "code", "source": ["for x, y in loader:\n",
                                     "    loss = torch.nn.functional.mse_loss(model(x), y)\n",
                                     "    loss.backward()\n", "    opt.zero_grad()\n", "    opt.step()\n",
                                     "model = torch.nn.DataParallel(model)  # noqa: TRN301\n"]},
]


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lint_rules", "lint", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _write(path, cells):
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_notebook_findings_name_cell_and_line(tmp_path):
    _write(tmp_path / "train.ipynb", CELLS)
    r = _run(".", cwd=tmp_path)  # directories are searched for notebooks too
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines()[0].startswith("train.ipynb:cell 4:4:5: TRN101 ")
    data = json.loads(_run("--format", "json", "train.ipynb", cwd=tmp_path).stdout)
    assert [(f["cell"], f["line"], f["column"], f["code"]) for f in data] == [(4, 4, 5, "TRN101")]


def test_clean_notebook_and_magics_do_not_break_parsing(tmp_path):
    cells = CELLS[:3]
    _write(tmp_path / "ok.ipynb", cells)
    r = _run("ok.ipynb", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert "TRN000" not in r.stdout


def test_invalid_notebook_is_a_finding_not_a_traceback(tmp_path):
    (tmp_path / "bad.ipynb").write_text('{"cells": "torch"')
    r = _run("bad.ipynb", cwd=tmp_path)
    assert r.returncode == 1 and "TRN000" in r.stdout and "not a valid notebook" in r.stdout
    assert "Traceback" not in r.stderr


def test_magics_as_a_blocks_only_statements_are_not_syntax_errors(tmp_path):
    """An `elif` (or `for`, `with`, `def`) whose body is only magics and shell escapes is valid IPython:
    no TRN000, and the later cells are still linted (their TRN101 is found)."""
    cells = [
        {"cell_type": "code", "source": ["import torch\n", "if mode == 'a':\n", "    x = 1\n",
                                         "elif mode == 'b':\n", "    %time prepare()\n",
                                         "    !nvidia-smi\n", "else:\n", "  %env X=1\n",
                                         "files = !ls *.csv\n", "gpu, = %sx nvidia-smi -L\n",
                                         "for f in files:\n", "    !cat $f\n", "def show():\n",
                                         "    %matplotlib inline"]},
        CELLS[1], CELLS[3],
    ]
    _write(tmp_path / "nb.ipynb", cells)
    data = json.loads(_run("--format", "json", "nb.ipynb", cwd=tmp_path).stdout)
    assert [(f["cell"], f["code"]) for f in data] == [(3, "TRN101")]


def test_a_notebook_cell_that_is_not_python_is_still_a_syntax_error(tmp_path):
    cells = [{"cell_type": "code", "source": ["import torch\n", "if x:\n", "print(1\n"]}]
    _write(tmp_path / "nb.ipynb", cells)
    data = json.loads(_run("--format", "json", "nb.ipynb", cwd=tmp_path).stdout)
    assert [f["code"] for f in data] == ["TRN000"]


def test_show_source_prints_the_cells_code_not_the_notebooks_json(tmp_path):
    """--show-source on a notebook finding shows the line of the cell it names, with the cell number
    and the caret under the reported span; never a line of the notebook's JSON, nor, for a notebook
    saved on one line, the whole file."""
    notebook = {"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "pretty.ipynb").write_text(json.dumps(notebook, indent=1))
    (tmp_path / "one_line.ipynb").write_text(json.dumps(notebook))
    for name in ("pretty.ipynb", "one_line.ipynb"):
        r = _run("--show-source", name, cwd=tmp_path)
        assert r.returncode == 1, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].startswith(f"{name}:cell 4:4:5: TRN101 "), lines
        assert lines[1] == "cell 4:4   |     opt.zero_grad()", lines
        assert lines[2] == " " * len("cell 4:4   | ") + "    " + "^" * len("opt.zero_grad()"), lines
        assert "cells" not in r.stdout and "cell_type" not in r.stdout
