"""The per-file syntax model: one fast traversal, scopes, bindings and names.

LibCST's metadata providers (scope, qualified names, positions) cost several
times the parse itself. This module walks the tree once with a hand-rolled
iterative traversal that skips whitespace and punctuation fields, and records
what rules need: parent links, lexical scopes with their bindings, and the nodes
of the types that rules visit, in document order. Name resolution is computed
lazily on top of that walk.

This module imports no other fact module: value kinds, training loops and
function summaries are built on top of it (see :mod:`lint_rules.analysis.model`)
and cached per file with :meth:`ScopeModel.fact`.
"""

from __future__ import annotations

import dataclasses
import operator
from bisect import bisect_left
from typing import Callable, Iterator, TypeVar

import libcst as cst

from lint_rules.analysis import names as N

_SKIP_FIELD_PREFIXES = (
    "whitespace", "lpar", "rpar", "leading_lines", "lines_after", "header", "footer",
    "comma", "semicolon", "newline", "equal", "colon", "star", "dot", "first_line",
    "empty_lines", "trailing_whitespace", "lbrace", "rbrace", "lbracket", "rbracket",
    "indent", "asynchronous", "encoding", "default_", "has_trailing", "leading_whitespace",
    "operator", "value_whitespace",
)
# Fields that hold a Name that is not a variable reference.
_SKIP_FIELDS: dict[type, frozenset[str]] = {
    cst.Attribute: frozenset({"attr"}),
    cst.Arg: frozenset({"keyword"}),
    cst.FunctionDef: frozenset({"name"}),
    cst.ClassDef: frozenset({"name"}),
    cst.Import: frozenset({"names"}),
    cst.ImportFrom: frozenset({"names", "module", "relative"}),
    cst.Param: frozenset({"name"}),
    cst.ExceptHandler: frozenset({"name"}),
    cst.Global: frozenset({"names"}),
    cst.Nonlocal: frozenset({"names"}),
    cst.MatchAs: frozenset({"name"}),
    cst.FormattedStringText: frozenset({"value"}),
}
# Source order differs from dataclass field order for these.
_FIELD_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
}

_FIELDS_CACHE: dict[type, tuple[str, ...]] = {}
_IS_NODE: dict[type, bool] = {}


_GETTERS: dict[type, Callable[[cst.CSTNode], tuple]] = {}


def _getter(tp: type) -> Callable[[cst.CSTNode], tuple]:
    """A function returning the values of ``tp``'s child fields, last field first (memoised)."""
    fields = tuple(reversed(_child_fields(tp)))
    if not fields:
        getter = _no_fields
    elif len(fields) == 1:
        one = operator.attrgetter(fields[0])
        getter = lambda node: (one(node),)  # noqa: E731
    else:
        getter = operator.attrgetter(*fields)
    _GETTERS[tp] = getter
    return getter


def _no_fields(node: cst.CSTNode) -> tuple:
    return ()


def _children_reversed(node: cst.CSTNode, getter: Callable[[cst.CSTNode], tuple]) -> list[cst.CSTNode]:
    out = []
    for value in getter(node):
        if type(value) is tuple or type(value) is list:
            out.extend(item for item in reversed(value) if _is_node(item))
        elif _is_node(value):
            out.append(value)
    return out


def _is_node(value: object) -> bool:
    yes = _IS_NODE.get(type(value))
    return _node_type(type(value)) if yes is None else yes


def _node_type(tp: type) -> bool:
    """Whether values of type ``tp`` are syntax nodes (memoised in ``_IS_NODE``)."""
    yes = _IS_NODE[tp] = issubclass(tp, cst.CSTNode)
    return yes


def _child_fields(tp: type) -> tuple[str, ...]:
    fields = _FIELDS_CACHE.get(tp)
    if fields is None:
        if tp in _FIELD_ORDER:
            fields = _FIELD_ORDER[tp]
        else:
            skip = _SKIP_FIELDS.get(tp, frozenset())
            fields = tuple(
                f.name
                for f in dataclasses.fields(tp)
                if not f.name.startswith(_SKIP_FIELD_PREFIXES) and f.name not in skip
            )
            if tp is cst.Attribute or tp is cst.Name or tp is cst.SimpleString:
                fields = tuple(f for f in fields if f != "value" or tp is cst.Attribute)
            if tp in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleWhitespace):
                fields = ()
        _FIELDS_CACHE[tp] = fields
    return fields


# Binding kinds
IMPORT = "import"
ASSIGN = "assign"
PARAM = "param"
FOR = "for"
WITH = "with"
DEF = "def"
CLASS = "class"
OTHER = "other"


class Binding:
    """One place where a name gets a value."""

    __slots__ = ("kind", "node", "value", "qualname", "scope", "element")

    def __init__(self, kind: str, node: cst.CSTNode, value: cst.CSTNode | None,
                 qualname: str | None, scope: "Scope",
                 element: tuple[cst.BaseExpression, int] | None = None) -> None:
        self.kind = kind
        self.node = node  # the binding statement / parameter / loop
        self.value = value  # assigned expression, loop iterable, with-item, def node ...
        self.qualname = qualname  # for imports
        self.scope = scope
        # `a, b = f(x)`: b is element 1 of f(x)'s value, (f(x), 1); its kind stays OTHER, value None
        self.element = element

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Binding({self.kind}, {self.qualname})"


class Scope:
    __slots__ = ("kind", "node", "parent", "bindings", "globals", "star_imports", "attrs")

    def __init__(self, kind: str, node: cst.CSTNode, parent: "Scope | None") -> None:
        self.kind = kind  # module | class | function | lambda | comprehension
        self.node = node
        self.parent = parent
        self.bindings: dict[str, list[Binding]] = {}
        self.globals: set[str] = set()
        self.star_imports: list[str] = []
        # For class scopes: "self.x" style attribute assignments made in its methods.
        self.attrs: dict[str, list[Binding]] = {}

    def bind(self, name: str, binding: Binding) -> None:
        target = self
        if name in self.globals:
            while target.parent is not None:
                target = target.parent
        target.bindings.setdefault(name, []).append(binding)


_SCOPE_NODES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp,
                cst.DictComp, cst.GeneratorExp)
_LOOP_TYPES = (cst.For, cst.While)
_FUNC_TYPES = (cst.FunctionDef, cst.Lambda)
# The same as sets of exact types, for hot paths: none of these LibCST classes has subclasses, and
# ``type(x) in S`` skips the slow ``isinstance`` of ABC-derived classes.
_FUNC_SET = frozenset(_FUNC_TYPES)
_LOOP_SET = frozenset(_LOOP_TYPES)
_DEF_SET = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})


def subtree(node: cst.CSTNode):
    """``node`` and every node below it (for small pieces of code: a test, a loop target)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def dotted(expr: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def call_method(node: cst.CSTNode) -> str | None:
    """The method name of ``<recv>.<name>(...)``, else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value
    return None


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def bind_arguments(call: cst.Call, fn: cst.FunctionDef) -> dict[str, cst.CSTNode | None]:
    """The expression each parameter of ``fn`` gets at ``call`` (its default when not passed).

    A method called as ``obj.method(...)`` binds ``self``/``cls`` to ``obj``, a class called by its
    name (``Trainer(model)``) binds its ``__init__``'s ``self`` to None (the new instance); a starred
    argument binds the parameters it could fill to None (unknown).
    """
    params = [*fn.params.posonly_params, *fn.params.params]
    out: dict[str, cst.CSTNode | None] = {p.name.value: p.default for p in (*params, *fn.params.kwonly_params)}
    if fn.name.value == "__init__" and params and isinstance(call.func, cst.Name):
        out[params[0].name.value] = None  # `Trainer(model, loader)`: self is the instance being built
        params = params[1:]
    elif isinstance(call.func, cst.Attribute) and params and params[0].name.value in ("self", "cls"):
        out[params[0].name.value] = call.func.value
        params = params[1:]
    positional = [a for a in call.args if a.keyword is None]
    for p, arg in zip(params, positional):
        out[p.name.value] = None if arg.star else arg.value
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in out:
            out[arg.keyword.value] = arg.value
    return out


def is_true(expr: cst.CSTNode | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def is_false(expr: cst.CSTNode | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def is_none(expr: cst.CSTNode | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


_T = TypeVar("_T")


class ScopeModel:
    """Syntax, scopes and names of one parsed file. Built by one traversal."""

    def __init__(self, module: cst.Module, interesting: frozenset[type] = frozenset()) -> None:
        self.module = module
        self.parents: dict[int, cst.CSTNode] = {}
        self.scope_of_name: dict[int, Scope] = {}
        self.scope_for_node: dict[int, Scope] = {}
        self.order: dict[int, int] = {}
        self.ordered: list[cst.CSTNode] = []  # nodes of `interesting` types, document order
        self.by_type: dict[type, list[cst.CSTNode]] = {}
        self.module_scope = Scope("module", module, None)
        self.scope_for_node[id(module)] = self.module_scope
        self._qual_cache: dict[int, str | None] = {}
        self._kind_cache: dict[int, str | None] = {}
        self._always = frozenset({cst.Call, cst.For, cst.While, cst.FunctionDef, cst.Lambda,
                                  cst.With, cst.If, cst.Assign, cst.AugAssign, cst.ClassDef,
                                  cst.Return})
        self._walk(interesting | self._always)
        self._facts: dict[Callable, object] = {}
        self._owner: dict[int, cst.CSTNode | None] = {}
        self._span_end: dict[int, int] = {}
        self._type_indices: dict[type, list[int]] = {}
        self._owned: dict[type, dict[int, list[cst.CSTNode]]] = {}
        self._backward_names: set[tuple[int, str]] | None = None
        self._def_names: frozenset[str] | None = None
        self._call_sites: dict[int, list[cst.Call]] | None = None
        self._methods: dict[tuple[int, str], cst.FunctionDef | None] = {}
        self._subclasses: dict[int, list[cst.ClassDef]] | None = None

    def dispose(self) -> None:
        """Drop everything this model holds, once its file is done.

        The model is full of reference cycles (a scope's bindings point back at the scope, cached
        facts point back at the model), so without this a file's whole syntax tree would live on
        until Python's cyclic collector found it, and every collection in between would traverse
        it: a fifth of a lint's time on torch/nn went to that. Cleared, the tree is freed at once
        by reference counting, as after a bare parse.
        """
        for scope in self.scope_for_node.values():
            scope.bindings.clear()
            scope.attrs.clear()
        self.module_scope.bindings.clear()
        self.module_scope.attrs.clear()
        self.__dict__.clear()

    # ------------------------------------------------------------------ walk
    def _walk(self, interesting: frozenset[type]) -> None:
        parents = self.parents
        scope_of_name = self.scope_of_name
        ordered = self.ordered
        order = self.order
        by_type = self.by_type
        Name = cst.Name
        # isinstance against CSTNode (an ABC) is the slow path of Python's isinstance; a type's
        # answer is looked up instead, once per type.
        is_node = _IS_NODE.get
        getters = _GETTERS.get
        FunctionDef, ClassDef = cst.FunctionDef, cst.ClassDef
        handlers = self._binding_handlers()
        stack: list[tuple[cst.CSTNode, Scope]] = [(self.module, self.module_scope)]
        pop = stack.pop
        push = stack.append
        while stack:
            node, scope = pop()
            tp = type(node)
            if tp is Name:
                scope_of_name[id(node)] = scope
                if tp in interesting:
                    order[id(node)] = len(ordered)
                    ordered.append(node)
                    by_type.setdefault(tp, []).append(node)
                continue
            if tp in interesting:
                order[id(node)] = len(ordered)
                ordered.append(node)
                by_type.setdefault(tp, []).append(node)
            handler = handlers.get(tp)
            child_scope = scope
            if handler is not None:
                child_scope = handler(node, scope)
            getter = getters(tp)
            if getter is None:
                getter = _getter(tp)
            if child_scope is not scope and (tp is FunctionDef or tp is ClassDef):
                # Decorators and class bases are evaluated in the enclosing scope.
                outer = {id(d) for d in node.decorators}
                if tp is ClassDef:
                    outer.update(id(a) for a in node.bases)
                    outer.update(id(a) for a in node.keywords)
                for child in _children_reversed(node, getter):
                    parents[id(child)] = node
                    push((child, scope if id(child) in outer else child_scope))
                continue
            # The children, last first (the stack pops them in document order), fetched by one
            # attrgetter per type over the fields that can hold nodes.
            for value in getter(node):
                vt = type(value)
                if vt is tuple or vt is list:
                    for item in reversed(value):
                        yes = is_node(type(item))
                        if yes is None:
                            yes = _node_type(type(item))
                        if yes:
                            parents[id(item)] = node
                            push((item, child_scope))
                    continue
                yes = is_node(vt)
                if yes is None:
                    yes = _node_type(vt)
                if yes:
                    parents[id(value)] = node
                    push((value, child_scope))

    def _binding_handlers(self):
        model = self

        def bind_target(target: cst.CSTNode, scope: Scope, kind: str, stmt: cst.CSTNode,
                        value: cst.CSTNode | None) -> None:
            if isinstance(target, cst.Name):
                scope.bind(target.value, Binding(kind, stmt, value, None, scope))
            elif isinstance(target, (cst.Tuple, cst.List)):
                values = None
                if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements):
                    values = [e.value for e in value.elements]
                unpacked = values is None and kind == ASSIGN and value is not None
                for i, el in enumerate(target.elements):
                    if isinstance(el, cst.StarredElement):
                        unpacked = False  # the elements after it have no fixed index
                    if unpacked and isinstance(el.value, cst.Name):
                        scope.bind(el.value.value, Binding(OTHER, stmt, None, None, scope, element=(value, i)))
                        continue
                    sub_value = values[i] if values is not None else (value if kind in (FOR, WITH) else None)
                    sub_kind = kind if values is not None or kind in (FOR, WITH) else OTHER
                    bind_target(el.value, scope, sub_kind, stmt, sub_value)
            elif isinstance(target, cst.StarredElement):
                bind_target(target.value, scope, OTHER, stmt, None)
            elif isinstance(target, cst.Attribute):
                text = dotted(target)
                if text is not None and text.startswith("self."):
                    cls = scope
                    while cls is not None and cls.kind != "class":
                        cls = cls.parent
                    if cls is not None:
                        cls.attrs.setdefault(text, []).append(Binding(kind, stmt, value, None, scope))
                elif text is not None:
                    model.module_scope.attrs.setdefault(text, []).append(
                        Binding(kind, stmt, value, None, scope))

        def on_import(node: cst.Import, scope: Scope) -> Scope:
            for alias in node.names:
                full = _attr_text(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    scope.bind(alias.asname.name.value, Binding(IMPORT, node, None, full, scope))
                else:
                    root = full.split(".", 1)[0]
                    scope.bind(root, Binding(IMPORT, node, None, root, scope))
            return scope

        def on_import_from(node: cst.ImportFrom, scope: Scope) -> Scope:
            relative = bool(node.relative) or node.module is None
            base = None if relative else _attr_text(node.module)
            if isinstance(node.names, cst.ImportStar):
                if base is not None:
                    scope.star_imports.append(base)
                return scope
            for alias in node.names:
                name = _attr_text(alias.name)
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                qual = None if base is None else f"{base}.{name}"
                scope.bind(local, Binding(IMPORT if qual else OTHER, node, None, qual, scope))
            return scope

        def on_assign(node: cst.Assign, scope: Scope) -> Scope:
            for t in node.targets:
                bind_target(t.target, scope, ASSIGN, node, node.value)
            return scope

        def on_ann_assign(node: cst.AnnAssign, scope: Scope) -> Scope:
            bind_target(node.target, scope, ASSIGN, node, node.value)
            return scope

        def on_aug_assign(node: cst.AugAssign, scope: Scope) -> Scope:
            if isinstance(node.target, cst.Name):
                scope.bind(node.target.value, Binding(OTHER, node, None, None, scope))
            return scope

        def on_named_expr(node: cst.NamedExpr, scope: Scope) -> Scope:
            while scope.kind == "comprehension" and scope.parent is not None:
                scope = scope.parent
            bind_target(node.target, scope, ASSIGN, node, node.value)
            return scope

        def on_for(node: cst.For, scope: Scope) -> Scope:
            bind_target(node.target, scope, FOR, node, node.iter)
            return scope

        def on_with(node: cst.With, scope: Scope) -> Scope:
            for item in node.items:
                if item.asname is not None:
                    bind_target(item.asname.name, scope, WITH, node, item.item)
            return scope

        def on_except(node: cst.ExceptHandler, scope: Scope) -> Scope:
            if node.name is not None and isinstance(node.name.name, cst.Name):
                scope.bind(node.name.name.value, Binding(OTHER, node, None, None, scope))
            return scope

        def on_function(node: cst.FunctionDef, scope: Scope) -> Scope:
            scope.bind(node.name.value, Binding(DEF, node, node, None, scope))
            inner = Scope("function", node, scope)
            model.scope_for_node[id(node)] = inner
            _bind_params(node.params, inner, node)
            return inner

        def on_lambda(node: cst.Lambda, scope: Scope) -> Scope:
            inner = Scope("lambda", node, scope)
            model.scope_for_node[id(node)] = inner
            _bind_params(node.params, inner, node)
            return inner

        def on_class(node: cst.ClassDef, scope: Scope) -> Scope:
            scope.bind(node.name.value, Binding(CLASS, node, node, None, scope))
            inner = Scope("class", node, scope)
            model.scope_for_node[id(node)] = inner
            return inner

        def on_comp(node: cst.CSTNode, scope: Scope) -> Scope:
            inner = Scope("comprehension", node, scope)
            model.scope_for_node[id(node)] = inner
            comp = node.for_in
            while comp is not None:
                bind_target(comp.target, inner, FOR, comp, comp.iter)
                comp = comp.inner_for_in
            return inner

        def on_global(node: cst.CSTNode, scope: Scope) -> Scope:
            for item in node.names:
                scope.globals.add(item.name.value)
            return scope

        def _bind_params(params: cst.Parameters, inner: Scope, owner: cst.CSTNode) -> None:
            for p in (*params.posonly_params, *params.params, *params.kwonly_params):
                inner.bind(p.name.value, Binding(PARAM, p, owner, None, inner))
            for p in (params.star_arg, params.star_kwarg):
                if isinstance(p, cst.Param):
                    inner.bind(p.name.value, Binding(OTHER, p, owner, None, inner))

        return {
            cst.Import: on_import,
            cst.ImportFrom: on_import_from,
            cst.Assign: on_assign,
            cst.AnnAssign: on_ann_assign,
            cst.AugAssign: on_aug_assign,
            cst.NamedExpr: on_named_expr,
            cst.For: on_for,
            cst.With: on_with,
            cst.ExceptHandler: on_except,
            cst.FunctionDef: on_function,
            cst.Lambda: on_lambda,
            cst.ClassDef: on_class,
            cst.ListComp: on_comp,
            cst.SetComp: on_comp,
            cst.DictComp: on_comp,
            cst.GeneratorExp: on_comp,
            cst.Global: on_global,
            cst.Nonlocal: on_global,
        }

    # --------------------------------------------------------------- structure
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parents = self.parents
        cur = parents.get(id(node))
        while cur is not None:
            yield cur
            cur = parents.get(id(cur))

    def is_inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return any(a is container for a in self.ancestors(node))

    def enclosing_function(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost ``def``/``lambda`` around ``node``; memoised along the parent chain,
        so asking for every node of a file costs one pass."""
        cache = self._owner
        parents = self.parents
        chain: list[int] = []
        key = id(node)
        result: cst.CSTNode | None = None
        while True:
            if key in cache:
                result = cache[key]
                break
            parent = parents.get(key)
            chain.append(key)
            if parent is None:
                break
            if type(parent) in _FUNC_SET:
                result = parent
                break
            key = id(parent)
        for k in chain:
            cache[k] = result
        return result

    def enclosing_loops(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """Loops around ``node`` within its own function, innermost first."""
        loops = []
        for a in self.ancestors(node):
            tp = type(a)  # exact types: isinstance against LibCST's ABC-derived classes is slow
            if tp in _DEF_SET:
                break
            if tp in _LOOP_SET:
                loops.append(a)
        return loops

    def in_loop_body(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """True when ``node`` runs once per iteration of ``loop`` (not its header or else)."""
        child = node
        for a in self.ancestors(node):
            if a is loop:
                return child is loop.body
            child = a
        return False

    # ------------------------------------------------------------ indexes
    # Rules ask "which calls (events, assignments) are inside this loop / of this function" once
    # per loop or function; scanning every node of the file for each would make a file's lint
    # time grow with the square of its size. These answer from the document order instead.
    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        """``(lo, hi)``: the nodes of ``ordered`` inside ``node`` (the module, or a node of
        ``ordered``) are ``ordered[lo:hi]``: in a depth-first walk they form one run after it."""
        ordered = self.ordered
        if node is self.module:
            return (1 if id(node) in self.order else 0), len(ordered)
        start = self.order[id(node)] + 1
        end = self._span_end.get(id(node))
        if end is None:
            lo, hi = start, len(ordered)
            while lo < hi:  # the first node after the run: is_inside holds up to it, then never
                mid = (lo + hi) // 2
                if self.is_inside(ordered[mid], node):
                    lo = mid + 1
                else:
                    hi = mid
            end = self._span_end[id(node)] = lo
        return start, end

    def anchor(self, node: cst.CSTNode) -> cst.CSTNode:
        """``node`` itself when it is in ``ordered`` (or the module), else its nearest such ancestor."""
        order = self.order
        cur: cst.CSTNode | None = node
        while cur is not None and id(cur) not in order and cur is not self.module:
            cur = self.parents.get(id(cur))
        return self.module if cur is None else cur

    def within(self, tp: type, container: cst.CSTNode) -> list[cst.CSTNode]:
        """The nodes of type ``tp`` (one of the walk's types) inside ``container``, in document
        order: the same as ``[n for n in self.nodes(tp) if self.is_inside(n, container)]``."""
        nodes = self.by_type.get(tp)
        if not nodes:
            return []
        indices = self._type_indices.get(tp)
        if indices is None:
            order = self.order
            indices = self._type_indices[tp] = [order[id(n)] for n in nodes]
        return self.sorted_within(nodes, indices, container, _same)

    def sorted_within(self, items: list[_T], indices: list[int], container: cst.CSTNode,
                      node_of: Callable[[_T], cst.CSTNode]) -> list[_T]:
        """The items inside ``container``: ``items`` are in document order, ``indices`` their
        nodes' indices in ``ordered`` and ``node_of(item)`` their node."""
        anchor = self.anchor(container)
        lo, hi = self.span(anchor)
        found = items[bisect_left(indices, lo):bisect_left(indices, hi)]
        if anchor is not container:  # a block, a test, an argument: not itself in ``ordered``
            found = [item for item in found if self.is_inside(node_of(item), container)]
        return found

    def owned(self, tp: type, fn: cst.CSTNode | None) -> list[cst.CSTNode]:
        """The nodes of type ``tp`` whose :meth:`enclosing_function` is ``fn`` (None: module level),
        in document order."""
        groups = self._owned.get(tp)
        if groups is None:
            groups = self._owned[tp] = {}
            for n in self.by_type.get(tp, ()):
                groups.setdefault(id(self.enclosing_function(n)), []).append(n)
        return groups.get(id(fn), [])

    def scope_at(self, node: cst.CSTNode) -> Scope:
        if type(node) is cst.Name:
            scope = self.scope_of_name.get(id(node))
            if scope is not None:
                return scope
        for a in self.ancestors(node):
            scope = self.scope_for_node.get(id(a))
            if scope is not None:
                return scope
        return self.module_scope

    def mutually_exclusive(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """True when ``a`` and ``b`` sit in different branches of one ``if``/``try``."""
        chain_a = [a, *self.ancestors(a)]
        ids_b: dict[int, cst.CSTNode] = {}
        prev = b
        for anc in self.ancestors(b):
            ids_b[id(anc)] = prev
            prev = anc
        prev_a = a
        for anc in chain_a[1:]:
            if id(anc) in ids_b:
                branch_b = ids_b[id(anc)]
                if isinstance(anc, (cst.If, cst.IfExp)):
                    return branch_b is not prev_a and {id(branch_b), id(prev_a)} <= {
                        id(anc.body), id(anc.orelse)}
                return False
            prev_a = anc
        return False

    # ------------------------------------------------------------- resolution
    def lookup(self, name: str, scope: Scope) -> list[Binding] | None:
        start = scope
        s: Scope | None = scope
        while s is not None:
            if s.kind == "class" and s is not start:
                s = s.parent
                continue
            found = s.bindings.get(name)
            if found:
                return found
            if name in s.globals:
                s = self.module_scope
                found = s.bindings.get(name)
                return found or None
            s = s.parent
        for base in self.module_scope.star_imports:
            if base.startswith("torch"):
                return [Binding(IMPORT, self.module, None, f"{base}.{name}", self.module_scope)]
        return None

    def bindings_of(self, expr: cst.CSTNode) -> list[Binding] | None:
        """Bindings of a Name, or of a ``self.x`` attribute within its class."""
        if isinstance(expr, cst.Name):
            return self.lookup(expr.value, self.scope_at(expr))
        text = dotted(expr)
        if text is None:
            return None
        if text.startswith("self."):
            s: Scope | None = self.scope_at(expr)
            while s is not None and s.kind != "class":
                s = s.parent
            if s is not None:
                return s.attrs.get(text)
            return None
        return self.module_scope.attrs.get(text)

    def reaching_bindings(self, name: cst.Name, at: cst.CSTNode) -> list[Binding] | None:
        """The bindings of ``name`` that can hold its value at ``at`` (a statement or call
        of this file): those of its own scope that come earlier, or later in a loop that
        holds both (the next iteration sees them); bindings of other scopes all count."""
        bindings = self.lookup(name.value, self.scope_at(name))
        if not bindings:
            return bindings
        index = self.order.get(id(at))
        if index is None:
            return bindings
        home = self.enclosing_function(at) or self.module
        loops: list[cst.CSTNode] | None = None
        out = []
        for b in bindings:
            b_index = self.order.get(id(b.node))
            if b_index is None or b_index < index or b.scope.node is not home:
                out.append(b)
                continue
            if loops is None:
                loops = self.enclosing_loops(at)
            if any(self.is_inside(b.node, loop) for loop in loops):
                out.append(b)
        return out

    def qualified_name(self, expr: cst.CSTNode, _depth: int = 0) -> str | None:
        """Canonical dotted name of what ``expr`` refers to, through imports and aliases."""
        key = id(expr)
        cache = self._qual_cache
        if key in cache:
            return cache[key]
        result: str | None = None
        if _depth < 8:
            if isinstance(expr, cst.Name):
                bindings = self.lookup(expr.value, self.scope_at(expr))
                if bindings:
                    quals = set()
                    for b in bindings:
                        if b.kind == IMPORT:
                            quals.add(b.qualname)
                        elif b.kind == ASSIGN and isinstance(b.value, (cst.Name, cst.Attribute)) \
                                and len(bindings) == 1:
                            quals.add(self.qualified_name(b.value, _depth + 1))
                        else:
                            quals.add(None)
                    if len(quals) == 1:
                        q = quals.pop()
                        result = N.canonical_name(q) if q else None
                elif expr.value in _BUILTINS:
                    result = "builtins." + expr.value
                elif expr.value == "torch":
                    # bound by nothing this file can see (a star import, `import torch.nn as nn`
                    # binds no `torch`): the name still means the torch package at run time
                    result = "torch"
            elif isinstance(expr, cst.Attribute):
                base = self.qualified_name(expr.value, _depth + 1)
                if base is not None and not base.startswith("builtins."):
                    result = N.canonical_name(f"{base}.{expr.attr.value}")
        cache[key] = result
        return result

    # ------------------------------------------------------------------ facts
    # ------------------------------------------------------------------ calls
    def local_function(self, expr: cst.CSTNode) -> cst.FunctionDef | None:
        """The ``def`` of this file that a Name or ``self.<method>`` refers to, if exactly one."""
        names = self._def_names
        if names is None:  # a name no `def` of the file has is not a local function: no lookup
            names = self._def_names = frozenset(fn.name.value for fn in self.nodes(cst.FunctionDef))
        tp = type(expr)
        if tp is cst.Name:
            if expr.value not in names:
                return None
            bindings = self.bindings_of(expr)
        elif tp is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            if expr.attr.value not in names:
                return None
            cls = self.scope_at(expr)
            while cls is not None and cls.kind != "class":
                cls = cls.parent
            return self.method(cls.node, expr.attr.value) if cls is not None else None
        else:
            return None
        return _one_def(bindings)

    def method(self, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        """The ``def`` that ``self.<name>()`` runs in a method of ``cls``, within this file: the class's
        own method, else the nearest one of its base classes defined in this file (depth first, left to
        right); where that is missing or a stub (``raise NotImplementedError``, ``pass``, ``...``), the
        one subclass of this file that defines it (a template method whose one implementation is here).
        None when no single ``def`` is known: a stub implemented several times or in other files runs
        code this file cannot name (:class:`~lint_rules.analysis.dispatch.Dispatch` answers with every
        implementation, in this file and in the project's others)."""
        cache = self._methods
        key = (id(cls), name)
        if key in cache:
            return cache[key]
        how, found = self.method_binding(cls, name)
        if how in (METHOD_STUB, METHOD_MISSING):
            overrides = self.overrides(cls, name)
            # a stub whose implementations are several, or elsewhere, runs code this file cannot name
            found = overrides[0] if overrides is not None and len(overrides) == 1 else None
        cache[key] = found
        return found

    def method_binding(self, cls: cst.ClassDef, name: str) -> tuple[str, cst.FunctionDef | None]:
        """How ``cls`` or the nearest of its base classes of this file binds ``name`` (depth first, left
        to right): (``METHOD_DEF``, the def), (``METHOD_STUB``, the def that only declares it: ``raise
        NotImplementedError``, ``pass``, ``...``), (``METHOD_OTHER``, None) for another binding (a value,
        two defs), (``METHOD_MISSING``, None) when no class of this file binds it."""
        seen: set[int] = set()
        stack = [cls]
        while stack:
            node = stack.pop()
            if id(node) in seen or len(seen) > 16:
                continue
            seen.add(id(node))
            scope = self.scope_for_node.get(id(node))
            bindings = scope.bindings.get(name) if scope is not None else None
            if bindings:
                # the name is bound here: a base's method is shadowed, whatever the binding
                fn = _one_def(bindings)
                if fn is None:
                    return METHOD_OTHER, None
                return (METHOD_STUB if is_stub(fn) else METHOD_DEF), fn
            stack.extend(reversed(self.file_bases(node)))
        return METHOD_MISSING, None

    def overrides(self, cls: cst.ClassDef, name: str) -> list[cst.FunctionDef] | None:
        """Every ``def`` of ``name`` in a subclass of ``cls`` of this file that implements it (a stub
        is no implementation: an instance of that class raises); None when a subclass binds the name
        to something else (a value, two defs), whose code this file cannot name."""
        out: list[cst.FunctionDef] = []
        for sub in self.file_subclasses(cls):
            bindings = self.scope_for_node[id(sub)].bindings.get(name)
            if not bindings:
                continue
            fn = _one_def(bindings)
            if fn is None:
                return None
            if not is_stub(fn):
                out.append(fn)
        out.sort(key=lambda fn: self.order.get(id(fn), 0))  # in document order, as written
        return out

    def file_bases(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """The base classes of ``cls`` that are classes of this file, in order."""
        out = []
        for arg in cls.bases:
            if arg.keyword is None and isinstance(arg.value, cst.Name):
                bound = self.lookup(arg.value.value, self.scope_at(cls))
                if bound and len(bound) == 1 and bound[0].kind == CLASS and bound[0].value is not cls:
                    out.append(bound[0].value)
        return out

    def file_subclasses(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """Every class of this file that derives from ``cls``, directly or not."""
        children = self._subclasses
        if children is None:
            children = self._subclasses = {}
            for node in self.nodes(cst.ClassDef):
                for base in self.file_bases(node):
                    children.setdefault(id(base), []).append(node)
        out: list[cst.ClassDef] = []
        stack = list(children.get(id(cls), ()))
        while stack and len(out) < 64:
            node = stack.pop()
            if node not in out and node is not cls:
                out.append(node)
                stack.extend(children.get(id(node), ()))
        return out

    def call_sites(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls in this file that call ``fn`` (through its name or ``self.<name>``); for an
        ``__init__``, the calls that build its class (``Trainer(model, loader)``)."""
        if self._call_sites is None:
            sites: dict[int, list[cst.Call]] = {}
            for call in self.nodes(cst.Call):
                if isinstance(call.func, (cst.Name, cst.Attribute)):
                    callee = self.local_function(call.func) or self._constructor(call.func)
                    if callee is not None:
                        sites.setdefault(id(callee), []).append(call)
            self._call_sites = sites
        return self._call_sites.get(id(fn), [])

    def _constructor(self, func: cst.CSTNode) -> cst.FunctionDef | None:
        """The ``__init__`` that a call of ``func`` runs when ``func`` names one class of this file
        that defines it."""
        if type(func) is not cst.Name:
            return None
        bindings = self.bindings_of(func)
        if not bindings or len(bindings) != 1 or bindings[0].kind != CLASS:
            return None
        body = bindings[0].value.body
        if not isinstance(body, cst.IndentedBlock):
            return None
        return next((s for s in body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)

    def fact(self, builder: Callable[..., _T]) -> _T:
        """The fact ``builder(self)`` of this file, built on first use and then shared.

        A fact module passes its own class (or function); nothing here needs to
        know the fact modules, so no fact module depends on another through this one.
        """
        found = self._facts.get(builder)
        if found is None:
            found = builder(self)
            self._facts[builder] = found
        return found  # type: ignore[return-value]

    def is_backward_receiver(self, name: cst.Name) -> bool:
        """True when ``<name>.backward()`` is called on the same binding somewhere."""
        if self._backward_names is None:
            found: set[tuple[int, str]] = set()
            for call in self.by_type.get(cst.Call, ()):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                    recv = func.value
                    if isinstance(recv, cst.Name):
                        found.add((id(self._binding_scope(recv)), recv.value))
            self._backward_names = found
        return (id(self._binding_scope(name)), name.value) in self._backward_names

    def _binding_scope(self, name: cst.Name) -> Scope:
        bindings = self.lookup(name.value, self.scope_at(name))
        return bindings[0].scope if bindings else self.module_scope

    def nodes(self, tp: type) -> list[cst.CSTNode]:
        return self.by_type.get(tp, [])


def _same(node: cst.CSTNode) -> cst.CSTNode:
    return node


def _attr_text(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_attr_text(node.value)}.{node.attr.value}"
    return ""


_BUILTINS = frozenset({"float", "int", "bool", "print", "isinstance", "len", "list", "dict",
                       "tuple", "set", "enumerate", "zip", "range", "iter", "next", "getattr",
                       "setattr", "super", "type", "str", "repr", "sum", "max", "min", "abs",
                       "round", "sorted", "map", "filter"})


# How a class binds a method name (ScopeModel.method_binding).
METHOD_DEF = "def"
METHOD_STUB = "stub"
METHOD_OTHER = "other"
METHOD_MISSING = "missing"


def _one_def(bindings) -> cst.FunctionDef | None:
    """The function when ``bindings`` are one ``def`` (a parameter's binding value is its own
    function: only a real ``def`` counts)."""
    if bindings and len(bindings) == 1 and bindings[0].kind == DEF and isinstance(bindings[0].value, cst.FunctionDef):
        return bindings[0].value
    return None


def is_stub(fn: cst.FunctionDef) -> bool:
    """A body that only declares the method: a docstring, ``pass``, ``...`` or ``raise
    NotImplementedError``."""
    body = fn.body
    if not isinstance(body, cst.IndentedBlock):
        statements = [body]
    else:
        statements = list(body.body)
    for statement in statements:
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString,
                                                                        cst.Ellipsis)):
                continue
            if isinstance(small, cst.Raise) and small.exc is not None:
                exc = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
                if isinstance(exc, cst.Name) and exc.value == "NotImplementedError":
                    continue
            return False
    return True

