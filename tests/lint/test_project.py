"""Reading the project's supported torch versions from pyproject.toml and requirements files."""

from __future__ import annotations

import pytest

from lint_rules.project import clear_cache, read_project, torch_min_version


def test_torch_min_version_specs():
    assert torch_min_version(["torch>=2.6,<3"]) == (2, 6)
    assert torch_min_version(["torch==2.13.0"]) == (2, 13)
    assert torch_min_version(["torch[opt] ~= 2.7.1 ; python_version > '3.9'"]) == (2, 7)
    assert torch_min_version(["torchvision>=0.20", "torch"]) is None
    assert torch_min_version(["numpy>=1.24"]) is None
    assert torch_min_version(["torch <2.0,>=1.9"]) == (1, 9)  # the upper bound is not a floor
    assert torch_min_version(["torch<2"]) is None
    assert torch_min_version(["torch==1.8.1+cu111"]) == (1, 8)
    assert torch_min_version(["torch ^1.12"]) == (1, 12)  # Poetry's caret
    assert torch_min_version(["pytorch=1.8"]) == (1, 8)  # conda's spelling
    assert torch_min_version(["pytorch::pytorch>=1.10"]) == (1, 10)
    assert torch_min_version(["pytorch-lightning>=2.0"]) is None


def _read(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    clear_cache()
    return read_project(tmp_path)


@pytest.mark.parametrize(("files", "expected", "source"), [
    ({"setup.py": "from setuptools import setup\nsetup(name='p', install_requires=['numpy', 'torch>=1.7'])\n"},
     (1, 7), "setup.py"),
    ({"setup.py": "import setuptools\nREQS = ['torch>=1.9.0', 'tqdm']\nsetuptools.setup(install_requires=REQS)\n"},
     (1, 9), "setup.py"),
    ({"setup.py": "from setuptools import setup\nsetup(install_requires=open('r.txt').read().split())\n"},
     None, "setup.py"),
    ({"setup.py": "this is not python ("}, None, "setup.py"),
    ({"setup.cfg": "[metadata]\nname = p\n[options]\ninstall_requires =\n    numpy\n    torch >= 1.11\n"},
     (1, 11), "setup.cfg"),
    ({"setup.cfg": "[options\nbroken"}, None, "setup.cfg"),
    ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.9"\ntorch = "^1.12"\n'}, (1, 12), "pyproject.toml"),
    ({"pyproject.toml": '[tool.poetry.dependencies]\ntorch = {version = ">=2.1", source = "cpu"}\n'},
     (2, 1), "pyproject.toml"),
    ({".git/HEAD": "", "requirements/base.txt": "torch>=1.10\n"}, (1, 10), "base.txt"),
    ({".git/HEAD": "", "requirements.txt": "-r requirements/common.txt\n", "requirements/common.txt": "torch>=2.2\n"},
     (2, 2), "requirements.txt"),
    ({".git/HEAD": "", "requirements.txt": "-r requirements.txt\n"}, None, None),  # includes itself
    ({".git/HEAD": "", "environment.yml": "dependencies:\n  - pytorch::pytorch=1.13\n  - pip:\n    - tqdm\n"},
     (1, 13), "environment.yml"),
])
def test_bound_from_other_project_files(tmp_path, files, expected, source):
    info = _read(tmp_path, files)
    assert info.torch_min_version == expected
    if expected is not None:
        assert info.source.endswith(source)


def test_setup_py_marks_the_project_root(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.0\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "setup.py").write_text("from setuptools import setup\nsetup(name='pkg')\n")
    clear_cache()
    info = read_project(pkg)  # a setup.py without a torch bound is the root: the parent's file is not read
    assert info.torch_min_version is None and info.source.endswith("setup.py")


def test_pyproject_then_requirements_then_stop_at_root(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch>=2.0  # pinned low\n")
    sub = tmp_path / "example"
    sub.mkdir()
    (sub / "requirements-dev.txt").write_text("pytest\ntorch>=2.6\n")
    assert read_project(sub).torch_min_version == (2, 6)
    (sub / "requirements-dev.txt").write_text("pytest\n")
    clear_cache()
    assert read_project(sub).torch_min_version == (2, 0)
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy"]\n')
    clear_cache()
    info = read_project(sub)  # a pyproject.toml without a torch bound is the project root
    assert info.torch_min_version is None and info.source.endswith("pyproject.toml")


AMP = """\
import torch
scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    pass
"""


@pytest.mark.parametrize(("floor", "below_floor"), [
    (None, set()),  # nothing declared: both get the replacement and its fix
    ((2, 3), set()),
    ((2, 0), {2}),  # torch.amp.GradScaler needs 2.3
    ((1, 8), {2, 3}),  # torch.autocast needs 1.10
])
def test_deprecated_amp_advice_never_names_an_api_the_floor_lacks(floor, below_floor):
    from lint_rules.api import Settings, lint_text
    from lint_rules.project import ProjectInfo

    settings = Settings.resolve(isolated=True, select=["TRN802"], project=ProjectInfo(floor, "/p/setup.py"))
    findings = {f.line: f for f in lint_text(AMP, "train.py", settings).findings}
    assert set(findings) == {2, 3}  # deprecated either way: projects with stale floors do move on
    for line, f in findings.items():
        if line in below_floor:  # the advice says what the move needs, and there is no fix
            assert f.fix is None and "raise that floor" in f.message and "(setup.py)" in f.message
            assert f"torch>={floor[0]}.{floor[1]}" in f.message
        else:
            assert f.fix is not None and "raise that floor" not in f.message


CUSTOM_FUNCTION = """\
import torch
class Clamp(torch.autograd.Function):
    @staticmethod
    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, x):
        return x.clamp(0, 1)
"""


@pytest.mark.parametrize(("floor", "below_floor"), [
    ((1, 4), set()),  # older than torch.cuda.amp itself: the code already broke that floor
    ((1, 5), set()),
    ((1, 6), {2, 3}),  # torch.cuda.amp exists there: the floor holds, and both replacements postdate it
    ((2, 3), set()),
])
def test_deprecated_amp_ignores_a_floor_the_code_already_breaks(floor, below_floor):
    from lint_rules.api import Settings, lint_text
    from lint_rules.project import ProjectInfo

    settings = Settings.resolve(isolated=True, select=["TRN802"], project=ProjectInfo(floor, "/p/setup.py"))
    findings = {f.line: f for f in lint_text(AMP, "train.py", settings).findings}
    assert set(findings) == {2, 3}
    for line, f in findings.items():
        assert (f.confidence == "possible") == (line in below_floor), (line, f.message)
        assert (f.fix is None) == (line in below_floor)


@pytest.mark.parametrize(("floor", "certain"), [(None, True), ((2, 4), True), ((2, 3), False), ((1, 2), True)])
def test_deprecated_amp_decorators_need_torch_2_4(floor, certain):
    from lint_rules.api import Settings, lint_text
    from lint_rules.project import ProjectInfo

    settings = Settings.resolve(isolated=True, select=["TRN802"], project=ProjectInfo(floor, "/p/setup.py"))
    (finding,) = lint_text(CUSTOM_FUNCTION, "ops.py", settings).findings
    assert finding.line == 4 and "torch.amp.custom_fwd" in finding.message
    assert (finding.confidence == "certain") == certain
    assert ("needs torch 2.4" in finding.message) == (not certain)
