"""Reading the project's supported torch versions from pyproject.toml and requirements files."""

from __future__ import annotations

from lint_rules.project import clear_cache, read_project, torch_min_version


def test_torch_min_version_specs():
    assert torch_min_version(["torch>=2.6,<3"]) == (2, 6)
    assert torch_min_version(["torch==2.13.0"]) == (2, 13)
    assert torch_min_version(["torch[opt] ~= 2.7.1 ; python_version > '3.9'"]) == (2, 7)
    assert torch_min_version(["torchvision>=0.20", "torch"]) is None
    assert torch_min_version(["numpy>=1.24"]) is None


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
