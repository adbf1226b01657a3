"""Materialise the files of the real-bug benchmark from local git clones.

For every case in manifest.toml, writes the file (and its `context` files) as it was at the parent
commit and at the fix commit:

    <out>/<owner>+<repo>/<commit>/<path>

Each repository is looked up under MIRRORS as ``<owner>+<repo>``: a full clone (``git clone
https://github.com/<owner>/<repo> MIRRORS/<owner>+<repo>``), a bare clone, or either of those in a
``repo/`` folder below it. Nothing is downloaded here.

    python benchmarks/realbugs/fetch_cases.py --mirrors ~/mirrors --out /tmp/realbugs-data

Exit status: 0 when every case was materialised, 1 when some could not be (each is named on
standard error with the reason), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from realbugs_manifest import Case, ManifestError, load_manifest  # noqa: E402


def git_dir(mirrors: Path, repository: str) -> Path | None:
    """The git directory of a local clone of ``repository`` under ``mirrors``, if there is one."""
    base = mirrors / repository.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def show(git: Path, commit: str, path: str) -> bytes | None:
    done = subprocess.run(["git", "--git-dir", str(git), "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def materialise(case: Case, mirrors: Path, out: Path) -> str | None:
    """Write one case's files; return why it could not be done, or None."""
    git = git_dir(mirrors, case.repository)
    if git is None:
        return f"no clone of {case.repository} under {mirrors} (looked for {case.repository.replace('/', '+')})"
    wanted = [(case.parent_commit, case.path_before), (case.fix_commit, case.path)]
    wanted += [(commit, extra) for extra in case.context for commit in (case.parent_commit, case.fix_commit)]
    for commit, path in wanted:
        data = show(git, commit, path)
        if data is None:
            return f"{path} at {commit[:12]} is not in the clone at {git}"
        target = case.file(out, commit, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder holding <owner>+<repo> clones")
    parser.add_argument("--out", type=Path, required=True, help="folder to write <owner>+<repo>/<commit>/<path> to")
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.toml")
    args = parser.parse_args(argv)
    if not args.mirrors.is_dir():
        parser.error(f"--mirrors {args.mirrors}: not a directory")
    try:
        cases = load_manifest(args.manifest)
    except ManifestError as e:
        parser.error(str(e))
    return materialise_all(cases, materialise, args.mirrors, args.out, lambda case: case.id)


def materialise_all(cases: list, materialise_one, mirrors: Path, out: Path, case_id) -> int:
    """Materialise every case with ``materialise_one(case, mirrors, out)`` (a reason when it could
    not), report each failure on stderr and the count on stdout; exit status 1 if any failed."""
    failed = 0
    for case in cases:
        reason = materialise_one(case, mirrors, out)
        if reason is not None:
            failed += 1
            print(f"{case_id(case)}: not materialised: {reason}", file=sys.stderr)
    print(f"materialised {len(cases) - failed}/{len(cases)} cases under {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
