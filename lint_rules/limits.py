"""What the linter will not parse: files too big, or nested too deeply, for LibCST.

LibCST's native parser recurses on the C stack: about 3,000 nested brackets or a
10,000-term ``1 + 1 + ...`` kills the process with a segmentation fault, and a
3,000-link call chain takes seconds. CPython's parser fails cleanly instead (more than
200 nested brackets is its syntax error) and builds a syntax tree whose depth is
measured against ``MAX_DEPTH``. Asking CPython costs a tenth of a lint, so it is asked
only when a cheap scan of the text (0.6% of a lint) sees something deep or long enough
to matter.
"""

from __future__ import annotations

import re

from lint_rules.errors import FileError

# Larger files are skipped with a note: LibCST needs about a minute and gigabytes of
# memory for 50 MB, and files that size are generated (protobuf, embedded weights).
MAX_FILE_BYTES = 10 * 1024 * 1024

# Below these, LibCST parses in well under a second whatever the file holds (measured:
# 1,000 nested brackets, elifs, attribute links or unary operators each parse in < 1 s).
_DEPTH = 100  # bracket nesting (CPython's limit is 200)
_SAFE_BRACKETS = 500  # LibCST parses 1,000 nested brackets; about 3,000 crash it
_SPAN = 20_000  # characters inside one outermost bracket pair
_LINE = 2_000  # characters on one line
_CONTINUED = 200  # backslash-continued lines in a row
_ELIFS = 500
# Syntax-tree depth (CPython's ``ast``) that LibCST parses in about a second; 3,000 takes it 3-10 s
# and 10,000 crashes it.
MAX_DEPTH = 1_000

_BRACKET = re.compile(r"[()\[\]{}]")
_OPEN = frozenset("([{")
_CONTINUATIONS_RUN = re.compile(r"(?:[^\n]*\\\r?\n){%d}" % _CONTINUED)


class TooDeep(FileError):
    """The file is nested beyond what the parsers handle; it was not linted."""


class ParserLimit(FileError):
    """CPython parses the file but LibCST does not: valid Python that torchcheck cannot analyse.
    Not a syntax error in the user's code (TRN000 is only for those), so, as Ruff does when it
    cannot lint a file, the run names it on stderr, lints the other files and exits 2."""


def check_parser_limit(source: str, path: str, reason: str) -> None:
    """Raise ``ParserLimit`` when CPython accepts ``source`` that LibCST rejected for ``reason``."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence": the user's, not ours to print
            compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return  # CPython rejects it too (or cannot tell): a syntax error, reported as TRN000
    raise ParserLimit(f"cannot lint {path}: it is valid Python, but torchcheck's parser (LibCST) "
                      f"cannot read it ({reason}); the file was not checked")


NULL_BYTE_MESSAGE = "SyntaxError: source code cannot contain null bytes"  # CPython 3.12's words


def null_byte(source: str) -> tuple[int, int] | None:
    """(line, 1-based column) of the first NUL in ``source``, which CPython refuses wherever it is (in a
    string or a comment too); None when there is none. Lines are counted as the parsers count them."""
    at = source.find("\0")
    if at < 0:
        return None
    head = source[:at]
    line = head.count("\n") + head.count("\r") - head.count("\r\n") + 1
    start = max(head.rfind("\n"), head.rfind("\r")) + 1
    return line, at - start + 1


def check_target(source: str, path: str) -> SyntaxError | None:
    """CPython's ``SyntaxError`` when the Python running torchcheck rejects ``source``, which LibCST parsed:
    LibCST reads syntax of newer Pythons (a same-quote nested f-string of 3.12) and some that no Python
    accepts (a line of blanks ending in a backslash). A file the target Python cannot run is never linted
    as if it could.

    The question is CPython's parser's, asked first by compiling to bytecode: 2.5x faster than building
    the AST's Python objects, which are most of an AST parse's cost, and a file that compiles parses. Only
    a file that does not compile is parsed again, because the compiler also rejects what the parser
    accepts and a fragment may hold (``return`` outside a function), which is no syntax error here."""
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "invalid escape sequence": the user's, not ours to print
        try:
            compile(source, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
            return None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass  # the parser's verdict decides
        try:
            compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as e:
            return e
        except (ValueError, RecursionError, MemoryError):
            return None  # LibCST read it; CPython cannot tell (NUL bytes are caught before the parse)
    return None


def _looks_deep(source: str) -> bool:
    if source.count("elif") > _ELIFS:
        return True
    if max(map(len, source.splitlines()), default=0) > _LINE:
        return True
    if source.count("\\\n") >= _CONTINUED and _CONTINUATIONS_RUN.search(source):
        return True
    depth = 0
    start = 0
    for m in _BRACKET.finditer(source):
        if m.group() in _OPEN:
            if depth == 0:
                start = m.start()
            depth += 1
            if depth > _DEPTH:
                return True
        elif depth:
            depth -= 1
            if depth == 0 and m.start() - start > _SPAN:
                return True
    return False


def check_depth(source: str, path: str) -> SyntaxError | None:
    """Raise ``TooDeep`` if the file is nested beyond CPython's parser or ``MAX_DEPTH``; return CPython's
    ``SyntaxError`` if CPython rejects it otherwise (LibCST must not see it: 300 nested
    brackets are a syntax error for CPython and a crash for LibCST); else None."""
    if not _looks_deep(source):
        return None
    import ast

    try:
        tree = compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as e:
        # Nesting CPython refuses is LibCST's crash; other syntax LibCST may know better (syntax newer
        # than this interpreter), so it decides, as it did before this check, unless the brackets alone
        # are deep enough to crash it.
        if "too many" in (e.msg or "") or _bracket_depth(source) > _SAFE_BRACKETS:
            return e
        return None
    except (RecursionError, MemoryError) as e:
        raise TooDeep(f"cannot lint {path}: it is nested too deeply to parse (CPython's parser gives up too: "
                      f"{str(e) or type(e).__name__}); the file was not checked") from None
    except ValueError:  # null bytes: LibCST reports those as a syntax error
        return None
    # CPython's limits differ between versions (3.10 and 3.13 accept a 3,000-term chain that 3.11 and
    # 3.12 refuse), so the depth LibCST will meet is measured here, against one limit for every version.
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        raise TooDeep(f"cannot lint {path}: its syntax tree is {depth} levels deep, over the limit of {MAX_DEPTH} "
                      "that torchcheck's parser handles safely; the file was not checked")
    return None


def _bracket_depth(source: str) -> int:
    from itertools import accumulate

    return max(accumulate(1 if b in _OPEN else -1 for b in _BRACKET.findall(source)), default=0)


def _depth(tree: object) -> int:
    import ast

    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
        stack += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return deepest
