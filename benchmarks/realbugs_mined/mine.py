"""Mine fix-shaped commits for the large real-bug benchmark (issue #22) from local git histories.

Scans each repository's recent non-merge commits (``git log -p``, Python files only) for diffs
shaped like a fix of one of torchcheck's rule families: a commit that adds ``set_epoch(``,
``model.eval()``, ``torch.no_grad()``, ``register_buffer``, ``nn.ModuleList``,
``weights_only=True``, an ``optimizer.zero_grad()``, ``.item()`` on an accumulated loss, moves
``zero_grad()`` or ``scheduler.step()``, drops a softmax in front of a cross-entropy, replaces
``nn.DataParallel`` ... (``FAMILIES`` below, one table: family -> pattern -> expected code).
A match is only a candidate: each is read (``show``) and given a verdict by hand in
``verdicts.csv``; ``manifest`` turns the verified ones into ``manifest.toml``.

    python benchmarks/realbugs_mined/mine.py scan [GIT_DIR ...]    # default: /work/.mirror/*
    python benchmarks/realbugs_mined/mine.py show ID [--context N]  # the matching hunks of a candidate
    python benchmarks/realbugs_mined/mine.py todo [--half tune]     # candidates without a verdict
    python benchmarks/realbugs_mined/mine.py manifest               # verdicts -> manifest.toml

``scan`` writes ``candidates.csv`` and ``repositories.toml`` (sorted, so a rerun on the same
histories gives the same bytes). Repositories reserved for the independent measurement and those
of the earlier benchmarks (benchmarks/realbugs, benchmarks/precision: their cases were tuned on)
are never scanned. Nothing of the repositories' code is written: names, commits, paths, counts
and commit subjects only.

Exit status: 0 on success, 2 on bad arguments (a missing git directory, an unknown candidate).
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(HERE))

from split import half  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MIRRORS = Path("/work/.mirror")
CANDIDATES = HERE / "candidates.csv"
REPOSITORIES = HERE / "repositories.toml"
VERDICTS = HERE / "verdicts.csv"
MANIFEST = HERE / "manifest.toml"

# Kept for the independent measurement (benchmarks/precision/README.md): never scanned. Matched on
# the name alone where the owner moved (pytorch-lightning is Lightning-AI/lightning today).
RESERVED_NAMES = {"pytorch-lightning", "lightning", "fairseq", "detectron2", "open_clip", "yolov5", "pytorch-gan",
                  "pytorchzerotoall", "pytorch-cifar"}
RESERVED_REPOS = {"morvanzhou/pytorch-tutorial", "yunjey/pytorch-tutorial"}


def _line_count(pattern: str, lines: list[str]) -> int:
    rx = re.compile(pattern)
    return sum(len(rx.findall(line)) for line in lines)


@dataclass
class FileDiff:
    """One Python file's changes in one commit: code lines only (comments and blanks dropped)."""

    path: str
    status: str = "M"  # A added, D deleted, M modified
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)

    def more(self, pattern: str) -> bool:
        """The fix adds occurrences of ``pattern``."""
        return _line_count(pattern, self.added) > _line_count(pattern, self.removed)

    def fewer(self, pattern: str) -> bool:
        """The fix removes occurrences of ``pattern``."""
        return _line_count(pattern, self.removed) > _line_count(pattern, self.added)

    def moved(self, pattern: str) -> bool:
        """The fix removes and re-adds ``pattern`` (it moves the statement)."""
        return _line_count(pattern, self.removed) > 0 and _line_count(pattern, self.added) > 0

    def mentions(self, pattern: str) -> bool:
        rx = re.compile(pattern)
        return any(rx.search(line) for line in self.added + self.removed + self.context)


def _accumulation_detached(d: FileDiff) -> bool:
    """``total += loss`` became ``total += loss.item()`` (or .detach(), float(...), .cpu())."""
    acc = re.compile(r"^([\w.\[\]'\"]+)\s*\+=\s*(.+)$")
    removed = {m[1]: m[2] for line in d.removed if (m := acc.match(line))}
    for line in d.added:
        m = acc.match(line)
        if m and m[1] in removed and re.search(r"\.item\(\)|\.detach\(\)|\bfloat\(|\.cpu\(\)", m[2]) \
                and not re.search(r"\.item\(\)|\.detach\(\)|\bfloat\(|\.cpu\(\)", removed[m[1]]) \
                and re.search(r"loss", m[1] + m[2], re.I):
            return True
    return False


_DP = r"(?<!Distributed)DataParallel\("
_SAVE_GUARD = r"rank\s*==\s*0|rank\s*in\s*[\[(]\s*-1\s*,\s*0|is_main_process|is_master|main_process|rank\s*<=\s*0"

# family -> (expected code, what the fix does, the test on one file's diff). One table: the
# expected code of a family is looked up here and nowhere else.
FAMILIES: dict[str, tuple[str, str, object]] = {
    "zero-grad-moved": ("TRN101", "moves zero_grad()", lambda d: d.moved(r"zero_grad\(")),
    "zero-grad-added": ("TRN102", "adds zero_grad()", lambda d: d.more(r"zero_grad\(")),
    "loss-accumulation-detached": ("TRN106", "detaches an accumulated loss", _accumulation_detached),
    "retain-graph-dropped": ("TRN107", "drops retain_graph=True", lambda d: d.fewer(r"retain_graph\s*=\s*True")),
    "empty-cache-dropped": ("TRN202", "drops torch.cuda.empty_cache()", lambda d: d.fewer(r"empty_cache\(\)")),
    "data-parallel-replaced": ("TRN301", "replaces nn.DataParallel by DDP",
                               lambda d: d.fewer(_DP) and d.more(r"DistributedDataParallel")),
    "set-epoch-added": ("TRN302", "adds sampler.set_epoch()", lambda d: d.more(r"\.set_epoch\(")),
    "shuffle-with-sampler": ("TRN303", "stops shuffle=True next to a sampler",
                             lambda d: d.fewer(r"shuffle\s*=\s*True") and d.mentions(r"sampler")),
    "save-guarded-by-rank": ("TRN304", "saves on rank 0 only",
                             lambda d: d.more(_SAVE_GUARD) and d.mentions(r"torch\.save\(|save_checkpoint\(")),
    "module-list-added": ("TRN401", "registers submodules in nn.ModuleList/ModuleDict/ParameterList",
                          lambda d: d.more(r"(?:ModuleList|ModuleDict|ParameterList|ParameterDict)\(") and d.removed),
    "register-buffer-added": ("TRN402", "registers a tensor attribute as a buffer",
                              lambda d: d.more(r"register_buffer\(") and d.mentions(r"self\.\w+\s*=")),
    "forward-call-replaced": ("TRN403", "calls the module instead of .forward()",
                              lambda d: d.fewer(r"(?<!super\(\))(?<!def )\b\w+\.forward\(")),
    "super-init-added": ("TRN404", "adds super().__init__()", lambda d: d.more(r"super\([^)]*\)\.__init__\(")),
    "softmax-before-cross-entropy": ("TRN501", "drops a softmax before a cross-entropy",
                                     lambda d: d.fewer(r"(?<!log_)softmax\(|(?<!Log)Softmax\(")
                                     and d.mentions(r"cross_entropy|CrossEntropyLoss")),
    "sigmoid-before-bce": ("TRN502", "moves to BCE with logits",
                           lambda d: d.more(r"BCEWithLogitsLoss|binary_cross_entropy_with_logits")
                           and d.fewer(r"sigmoid\(|BCELoss\(|binary_cross_entropy\(")),
    "log-of-softmax": ("TRN503", "replaces log(softmax) by log_softmax",
                       lambda d: d.more(r"log_softmax\(|LogSoftmax\(") and d.fewer(r"log\(")
                       and d.fewer(r"(?<!log_)softmax\(")),
    "nll-without-log-softmax": ("TRN504", "adds log_softmax before nll_loss",
                                lambda d: d.more(r"log_softmax\(|LogSoftmax\(") and d.mentions(r"nll_loss|NLLLoss")),
    "no-grad-added": ("TRN601", "adds torch.no_grad()/inference_mode()",
                      lambda d: d.more(r"no_grad\(\)|inference_mode\(")),
    "eval-added": ("TRN602", "adds model.eval()", lambda d: d.more(r"\.eval\(\)")),
    "train-added": ("TRN603", "adds model.train()",
                    lambda d: d.more(r"\.train\(\)|\.train\(True\)|\.train\(mode=True\)")),
    "dropout-training-added": ("TRN604", "passes training=self.training to F.dropout",
                               lambda d: d.more(r"training\s*=\s*self\.training")),
    "weights-only-added": ("TRN701", "adds weights_only=True to torch.load",
                           lambda d: d.more(r"weights_only\s*=\s*True")),
    "state-dict-saved": ("TRN702", "saves the state_dict instead of the module",
                         lambda d: d.moved(r"torch\.save\(") and d.more(r"state_dict\(\)")),
    "scheduler-step-moved": ("TRN801", "moves scheduler.step()", lambda d: d.moved(r"sched\w*\.step\(")),
    "amp-api-migrated": ("TRN802", "moves off torch.cuda.amp",
                         lambda d: d.fewer(r"torch\.cuda\.amp|cuda\.amp\.") and d.more(r"torch\.amp|torch\.autocast")),
    "unscale-added": ("TRN803", "adds scaler.unscale_() before clipping", lambda d: d.more(r"unscale_\(")),
}
# What git's -G prefilter looks for: every family's trigger word, so no candidate is lost to it.
TRIGGERS = (r"zero_grad|\+=|retain_graph|empty_cache|DataParallel|set_epoch|shuffle|torch\.save|save_checkpoint|"
            r"ModuleList|ModuleDict|ParameterList|ParameterDict|register_buffer|\.forward\(|__init__|softmax|Softmax|"
            r"BCE|binary_cross_entropy|no_grad|inference_mode|\.eval\(|\.train\(|training|weights_only|state_dict|"
            r"\.step\(|amp|autocast|unscale_")
# What `show` looks for in a hunk to print it: the family's own words (triage reads only those hunks).
KEYS = {
    "zero-grad-moved": r"zero_grad", "zero-grad-added": r"zero_grad", "loss-accumulation-detached": r"\+=",
    "retain-graph-dropped": r"retain_graph", "empty-cache-dropped": r"empty_cache",
    "data-parallel-replaced": r"DataParallel", "set-epoch-added": r"set_epoch", "shuffle-with-sampler": r"shuffle",
    "save-guarded-by-rank": r"rank|main_process|master", "module-list-added": r"Module|Parameter|\[\]",
    "register-buffer-added": r"register_buffer|self\.\w+\s*=", "forward-call-replaced": r"forward\(",
    "super-init-added": r"__init__", "softmax-before-cross-entropy": r"oftmax|cross_entropy|CrossEntropy",
    "sigmoid-before-bce": r"sigmoid|BCE|binary_cross", "log-of-softmax": r"softmax|log",
    "nll-without-log-softmax": r"softmax|nll|NLL", "no-grad-added": r"no_grad|inference_mode",
    "eval-added": r"\.eval\(", "train-added": r"\.train\(", "dropout-training-added": r"dropout|training",
    "weights-only-added": r"weights_only|load\(",
    "state-dict-saved": r"save\(|state_dict", "scheduler-step-moved": r"\.step\(|zero_grad|backward",
    "amp-api-migrated": r"amp|autocast|GradScaler", "unscale-added": r"unscale_|clip_grad",
}
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$")


@dataclass(frozen=True)
class Candidate:
    id: str
    repository: str
    half: str
    family: str
    expected: str
    fix_commit: str
    parent_commit: str
    path: str
    added: int
    removed: int
    commit_lines: int
    subject: str

    FIELDS = ("id", "repository", "half", "family", "expected", "fix_commit", "parent_commit", "path",
              "added", "removed", "commit_lines", "subject")


def repository_of(git_dir: Path) -> str:
    """``owner/name`` from a mirror path ``.../owner+name/repo[/.git]``."""
    for part in reversed(git_dir.resolve().parts):
        if "+" in part:
            owner, _, name = part.partition("+")
            return f"{owner}/{name}"
    raise ValueError(f"{git_dir}: cannot tell owner/name (expected a folder named owner+name above it)")


def excluded_repositories() -> dict[str, str]:
    """Lowercase owner/name -> why it is never scanned (the earlier benchmarks' repositories)."""
    out = {}
    realbugs = tomllib.loads((BENCH / "realbugs" / "manifest.toml").read_text(encoding="utf-8"))
    for case in realbugs.get("case", []):
        out[case["repository"].lower()] = "in benchmarks/realbugs (tuned on)"
    precision = tomllib.loads((BENCH / "precision" / "manifest.toml").read_text(encoding="utf-8"))
    for repo in precision.get("repo", []):
        out[repo["name"].lower()] = "in benchmarks/precision (tuned on)"
    return out


def why_excluded(repository: str, excluded: dict[str, str]) -> str | None:
    low = repository.lower()
    if low in RESERVED_REPOS or low.split("/", 1)[1] in RESERVED_NAMES:
        return "reserved for the independent measurement"
    return excluded.get(low)


def git_dirs_under(mirrors: Path) -> list[Path]:
    found = []
    for base in sorted(p for p in mirrors.iterdir() if p.is_dir() and "+" in p.name and not p.name.endswith(".part")):
        for candidate in (base / "repo" / ".git", base / "repo", base / ".git", base):
            if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
                found.append(candidate)
                break
    return found


def _git(git_dir: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["git", "--git-dir", str(git_dir), "-c", "core.quotepath=off", *args], input=stdin,
                          capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])} in {git_dir}: {done.stderr.strip()[:300]}")
    return done.stdout


_CODE_LINE = re.compile(r"^\s*(#.*)?$")


def _code(line: str) -> str | None:
    """The line without its trailing comment and surrounding space; None for a blank or comment line."""
    if _CODE_LINE.match(line):
        return None
    return re.sub(r"\s+#[^'\"]*$", "", line).strip()


def parse_log(text: str) -> list[tuple[str, str, str, list[FileDiff]]]:
    """(commit, parent, subject, file diffs) per commit of ``git log -p --format=%x01%H %P%x02%s``."""
    commits = []
    for chunk in text.split("\x01")[1:]:
        header, _, rest = chunk.partition("\x02")
        shas = header.split()
        subject, _, patch = rest.partition("\n")
        files: list[FileDiff] = []
        current: FileDiff | None = None
        for line in patch.split("\n"):
            if line.startswith("diff --git "):
                m = re.match(r"diff --git a/(.*) b/(.*)$", line)
                current = FileDiff(m[2] if m else line[11:])
                files.append(current)
            elif current is None:
                continue
            elif line.startswith("new file mode"):
                current.status = "A"
            elif line.startswith("deleted file mode"):
                current.status = "D"
            elif line.startswith(("+++ ", "--- ", "@@", "index ", "similarity", "rename ", "old mode", "new mode")):
                continue
            elif line[:1] in "+- ":
                code = _code(line[1:])
                if code is not None:
                    {"+": current.added, "-": current.removed, " ": current.context}[line[0]].append(code)
        if len(shas) >= 2:  # a root commit has no parent to compare with
            commits.append((shas[0], shas[1], subject.strip(), files))
    return commits


_NEW_DEF = re.compile(r"(async\s+)?def\s|class\s")


def scan_repository(git_dir: Path, max_commits: int, max_lines: int, max_file_lines: int) -> list[Candidate]:
    repository = repository_of(git_dir)
    revs = _git(git_dir, "rev-list", "--no-merges", f"--max-count={max_commits}", "HEAD")
    if not revs.strip():
        return []
    log = _git(git_dir, "log", "--no-walk", "--stdin", "--no-merges", "--no-renames", "-p", "-U3",
               "--pickaxe-all", f"-G{TRIGGERS}", "--format=%x01%H %P%x02%s", "--", "*.py", stdin=revs)
    out = []
    for sha, parent, subject, files in parse_log(log):
        commit_lines = sum(len(f.added) + len(f.removed) for f in files)
        if commit_lines > max_lines:
            continue  # a large change is a refactor or a feature more often than a fix
        for f in files:
            if f.status != "M" or _TEST_PATH.search(f.path) or len(f.added) > max_file_lines:
                continue
            if any(_NEW_DEF.match(line) for line in f.added):
                continue  # a new function or class: a feature more often than a fix
            for family, (code, _, test) in FAMILIES.items():
                if test(f):
                    stem = Path(f.path).stem
                    cid = f"{repository.split('/')[1].lower()}-{code.lower()}-{sha[:7]}-{stem}"
                    out.append(Candidate(cid, repository, half(repository), family, code, sha, parent, f.path,
                                         len(f.added), len(f.removed), commit_lines, subject))
    return out


def _dedupe_ids(cands: list[Candidate]) -> list[Candidate]:
    seen: dict[str, int] = {}
    out = []
    for c in cands:
        n = seen.get(c.id, 0)
        seen[c.id] = n + 1
        if n:
            c = Candidate(**{**c.__dict__, "id": f"{c.id}-{n + 1}"})
        out.append(c)
    return out


def cmd_scan(args) -> int:
    dirs = [Path(p) for p in args.git_dirs] or git_dirs_under(args.mirrors)
    for d in dirs:
        if not (d / "objects").is_dir():
            print(f"mine.py: error: {d}: not a git directory (no objects/ in it)", file=sys.stderr)
            return 2
    excluded = excluded_repositories()
    rows, cands = [], []
    for d in dirs:
        repository = repository_of(d)
        why = why_excluded(repository, excluded)
        if why:
            print(f"skipped {repository}: {why}", file=sys.stderr)
            continue
        head = _git(d, "rev-parse", "HEAD").strip()
        found = scan_repository(d, args.max_commits, args.max_lines, args.max_file_lines)
        rows.append((repository, head, half(repository), len(found)))
        cands.extend(found)
        if not args.quiet:
            print(f"{repository}: {len(found)} candidates", file=sys.stderr)
    rows.sort(key=lambda r: r[0].lower())
    cands.sort(key=lambda c: (c.repository.lower(), c.fix_commit, c.path, c.family))
    cands = _dedupe_ids(cands)
    with open(args.out, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(Candidate.FIELDS)
        for c in cands:
            w.writerow([getattr(c, k) for k in Candidate.FIELDS])
    with open(args.repositories, "w", encoding="utf-8") as fh:
        fh.write("# Repositories scanned by mine.py (the HEAD of each snapshot) and their half (split.py).\n"
                 f"# Scanned: the {args.max_commits} most recent non-merge commits of each; a commit changing more\n"
                 f"# than {args.max_lines} lines of Python, and a file adding more than {args.max_file_lines} "
                 "lines or a\n"
                 "# def/class, are skipped.\n")
        for repository, head, h, n in rows:
            fh.write(f'\n[[repo]]\nname = "{repository}"\ncommit = "{head}"\nhalf = "{h}"\ncandidates = {n}\n')
    print(f"{len(rows)} repositories, {len(cands)} candidates -> {args.out}")
    return 0


def load_candidates(path: Path = CANDIDATES) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["id"]: row for row in csv.DictReader(fh)}


def load_verdicts(path: Path = VERDICTS) -> dict[str, dict[str, str]]:
    """id -> {verdict, shape, reason, expected}; verdict is ``verified`` or ``rejected``; ``expected``
    (optional) names the rule the fix really is about when it is not the family's (the id keeps the
    family's code, as mined)."""
    if not path.is_file():
        return {}
    out = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for i, row in enumerate(csv.DictReader(fh), 2):
            if row.get("verdict") not in ("verified", "rejected"):
                raise ValueError(f"{path}:{i}: verdict {row.get('verdict')!r}; allowed: verified, rejected")
            out[row["id"]] = row
    return out


def _mirror_of(repository: str, mirrors: Path) -> Path:
    base = mirrors / repository.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file():
            return candidate
    raise FileNotFoundError(f"no git directory for {repository} under {mirrors}")


def _hunks_matching(diff: str, key: str) -> str:
    """The hunks of ``diff`` with a changed line matching ``key`` (the rest of a diff is noise in triage)."""
    rx = re.compile(key)
    parts = re.split(r"(?m)^(?=@@ )", diff)
    keep = [p for p in parts[1:] if any(line[:1] in "+-" and rx.search(line) for line in p.splitlines()[1:])]
    return "".join(keep)


def cmd_show(args) -> int:
    cands = load_candidates(args.candidates)
    verdicts = load_verdicts(args.verdicts)
    ids = list(args.ids)
    if args.family or args.todo_half:
        ids += [cid for cid, c in cands.items() if cid not in verdicts
                and (args.family is None or c["family"] == args.family)
                and (args.todo_half is None or c["half"] == args.todo_half)][:args.batch]
    for cid in ids:
        c = cands.get(cid)
        if c is None:
            print(f"mine.py: error: no candidate {cid!r} in {args.candidates}", file=sys.stderr)
            return 2
        git = _mirror_of(c["repository"], args.mirrors)
        print(f"=== {cid}  [{c['family']} {c['expected']}]  {c['repository']} "
              f"{c['fix_commit'][:10]}\n"
              f"    {c['subject']}\n    {c['path']}  +{c['added']} -{c['removed']} (commit {c['commit_lines']})")
        diff = _git(git, "show", f"-U{args.context}", "--format=", c["fix_commit"], "--", c["path"])
        print((_hunks_matching(diff, KEYS[c["family"]]) or diff)[:args.limit])
    return 0


def cmd_todo(args) -> int:
    cands = load_candidates(args.candidates)
    verdicts = load_verdicts(args.verdicts)
    for cid, c in cands.items():
        if cid not in verdicts and (args.half is None or c["half"] == args.half) \
                and (args.family is None or c["family"] == args.family):
            print(f"{cid}\t{c['family']}\t+{c['added']}-{c['removed']}\t{c['subject'][:80]}")
    return 0


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def cmd_manifest(args) -> int:
    cands = load_candidates(args.candidates)
    verdicts = load_verdicts(args.verdicts)
    unknown = sorted(set(verdicts) - set(cands))
    if unknown:
        print(f"mine.py: error: verdicts for unknown candidates: {', '.join(unknown[:5])}", file=sys.stderr)
        return 2
    lines = ["# Mined real-bug benchmark (issue #22): the candidates of candidates.csv verified by reading",
             "# their diffs (verdicts.csv). Schema of benchmarks/realbugs/manifest.toml, plus `half`",
             "# (split.py) and `family` (mine.py's pattern). `bug` is the verdict's reason, in our words.",
             "# `shape` is judged from the diff alone (see benchmarks/README.md)."]
    n = 0
    for cid, c in cands.items():
        v = verdicts.get(cid)
        if v is None or v["verdict"] != "verified":
            continue
        n += 1
        fields = [("id", cid), ("repository", c["repository"]), ("half", c["half"]), ("family", c["family"]),
                  ("fix_commit", c["fix_commit"]), ("parent_commit", c["parent_commit"]), ("path", c["path"]),
                  ("expected", v.get("expected") or c["expected"]), ("shape", v.get("shape") or "direct"),
                  ("bug", v["reason"]),
                  ("source", f"https://github.com/{c['repository']}/commit/{c['fix_commit']}"),
                  ("commit_message", c["subject"]), ("materialised", "git-archive-tree")]
        lines.append("\n[[case]]")
        lines += [f"{k} = {_toml_str(val)}" for k, val in fields]
    args.manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{n} verified cases -> {args.manifest}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help="folder of owner+name snapshots")
    parser.add_argument("--candidates", type=Path, default=CANDIDATES)
    parser.add_argument("--verdicts", type=Path, default=VERDICTS)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("scan", help="mine candidates from git directories")
    p.add_argument("git_dirs", nargs="*", help="git directories (default: every snapshot under --mirrors)")
    p.add_argument("--max-commits", type=int, default=5000, help="most recent non-merge commits per repository")
    p.add_argument("--max-lines", type=int, default=160, help="skip commits changing more Python lines")
    p.add_argument("--max-file-lines", type=int, default=60, help="skip files with more added lines")
    p.add_argument("--out", type=Path, default=CANDIDATES)
    p.add_argument("--repositories", type=Path, default=REPOSITORIES)
    p.add_argument("-q", "--quiet", action="store_true")
    p = sub.add_parser("show", help="print a candidate's diff for triage")
    p.add_argument("ids", nargs="*")
    p.add_argument("--family", help="also every candidate of this family without a verdict")
    p.add_argument("--todo-half", choices=("tune", "check"), help="also every candidate of this half without a verdict")
    p.add_argument("--batch", type=int, default=15, help="at most this many from --family/--todo-half")
    p.add_argument("--context", type=int, default=4)
    p.add_argument("--limit", type=int, default=2500, help="characters of diff per candidate")
    p = sub.add_parser("todo", help="candidates without a verdict")
    p.add_argument("--half", choices=("tune", "check"))
    p.add_argument("--family")
    p = sub.add_parser("manifest", help="write manifest.toml from the verified candidates")
    p.add_argument("--manifest", type=Path, default=MANIFEST)
    args = parser.parse_args(argv)
    if args.cmd == "scan" and not args.git_dirs and not args.mirrors.is_dir():
        parser.error(f"--mirrors {args.mirrors}: not a directory")
    try:
        return {"scan": cmd_scan, "show": cmd_show, "todo": cmd_todo, "manifest": cmd_manifest}[args.cmd](args)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        print(f"mine.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
