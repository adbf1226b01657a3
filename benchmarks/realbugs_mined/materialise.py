"""Materialise the mined benchmark's cases as whole repository trees, from local git histories.

For every case of manifest.toml, writes the repository's tree at the parent and at the fix commit
(every Python file, and the files that state the project's dependencies: pyproject.toml,
setup.py, setup.cfg, requirements*.txt), read from git (ls-tree and cat-file), so that cross-file facts can be
resolved as in the project itself:

    <out>/<owner>+<repo>/<commit>/...          one tree per commit, shared by the cases at it
    <out>/_hunks/<case id>.json                the fix's line ranges in the file, before and after

Nothing is downloaded: each repository is read from MIRRORS/<owner>+<repo> (as `fetch` leaves it:
``repo/``, ``repo/.git``, or a bare or full clone there). The output lives outside this repository
(third-party code is never committed).

    python benchmarks/realbugs_mined/materialise.py --out /work/realbugs-mined-data

Exit status: 0 when every case was materialised, 1 when some could not be (each named on standard
error with the reason), 2 on bad arguments or a malformed manifest.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "realbugs"))

from cases import MANIFEST, MinedCase, load  # noqa: E402
from fetch_cases import git_dir, materialise_all  # noqa: E402
from realbugs_manifest import ManifestError  # noqa: E402

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _wanted(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") or name in ("pyproject.toml", "setup.py", "setup.cfg") or \
        (name.startswith("requirements") and name.endswith(".txt"))


def write_tree(git: Path, commit: str, target: Path) -> None:
    """Write the files of ``commit`` that a lint needs (see _wanted) under ``target``; once per commit.

    The tree is listed with ``git ls-tree`` and the blobs read with one ``git cat-file --batch`` (as
    ``git archive`` would, without failing on a pattern that matches nothing in an old commit).
    """
    done_marker = target / ".materialised"
    if done_marker.is_file():
        return
    listing = subprocess.run(["git", "--git-dir", str(git), "ls-tree", "-r", "-z", commit],
                             capture_output=True)
    if listing.returncode != 0:
        raise RuntimeError(f"git ls-tree {commit[:12]}: {listing.stderr.decode(errors='replace').strip()[:200]}")
    blobs = []
    for entry in listing.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        name = path.decode("utf-8", "replace")
        # Regular files only (no links out of the tree), and no path that climbs out of it.
        if kind == b"blob" and mode in (b"100644", b"100755") and _wanted(name) and ".." not in name.split("/"):
            blobs.append((sha.decode(), name))
    batch = subprocess.run(["git", "--git-dir", str(git), "cat-file", "--batch"],
                           input="".join(f"{sha}\n" for sha, _ in blobs).encode(), capture_output=True)
    if batch.returncode != 0:
        raise RuntimeError(f"git cat-file {commit[:12]}: {batch.stderr.decode(errors='replace').strip()[:200]}")
    out, pos = batch.stdout, 0
    for _, name in blobs:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        data = out[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1  # the blob is followed by a newline
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    target.mkdir(parents=True, exist_ok=True)
    done_marker.write_text(commit + "\n")


def hunks(git: Path, parent: str, fix: str, path: str) -> list[dict[str, int]]:
    """The fix's changed line ranges: ``before``/``after`` start and length of each hunk."""
    diff = subprocess.run(["git", "--git-dir", str(git), "diff", "-U0", "--no-renames", parent, fix, "--", path],
                          capture_output=True, text=True, errors="replace")
    out = []
    for line in diff.stdout.splitlines():
        m = _HUNK.match(line)
        if m:
            out.append({"before": int(m[1]), "before_len": int(m[2] or 1),
                        "after": int(m[3]), "after_len": int(m[4] or 1)})
    return out


def materialise(case: MinedCase, mirrors: Path, out: Path) -> str | None:
    """Write one case's two trees and its hunks; return why it could not be done, or None."""
    c = case.case
    git = git_dir(mirrors, c.repository)
    if git is None:
        return f"no clone of {c.repository} under {mirrors} (looked for {c.repository.replace('/', '+')})"
    try:
        for commit in (c.parent_commit, c.fix_commit):
            write_tree(git, commit, case.tree(out, commit))
    except (RuntimeError, OSError, ValueError) as e:
        return str(e)
    for commit, path in ((c.parent_commit, c.path_before), (c.fix_commit, c.path)):
        if not (case.tree(out, commit) / path).is_file():
            return f"{path} is not in the tree of {commit[:12]}"
    target = case.hunks_file(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(hunks(git, c.parent_commit, c.fix_commit, c.path)) + "\n")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="folder of <owner>+<repo> clones")
    parser.add_argument("--out", type=Path, default=Path("/work/realbugs-mined-data"))
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    args = parser.parse_args(argv)
    if not args.mirrors.is_dir():
        parser.error(f"--mirrors {args.mirrors}: not a directory")
    try:
        cases = load(args.manifest)
    except ManifestError as e:
        parser.error(str(e))
    return materialise_all(cases, materialise, args.mirrors, args.out, lambda case: case.case.id)


if __name__ == "__main__":
    sys.exit(main())
