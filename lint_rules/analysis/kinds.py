"""What kind of value an expression holds, from its bindings.

Kinds: ``optimizer``, ``scaler``, ``scheduler``, ``sampler`` (a DistributedSampler),
``loader``, ``criterion`` (a loss module), ``loss`` (a loss value), ``module``,
``parameter``, ``leaf`` (a tensor created with ``requires_grad=True``), ``tensor``.

Resolution goes through imports and assignments first; a call of a class of
another project file is a module when the project's summaries say that class
subclasses ``nn.Module``. Variable names are a last-resort hint, used only for
optimizers, scalers and schedulers whose construction is out of sight (a
parameter, ``self.optimizer`` set elsewhere), and never for a parameter whose
annotation or docstring declares plain data (``model (dict): ...``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis import names as N
from lint_rules.analysis.scopes import (ASSIGN, CLASS, DEF, FOR, PARAM, WITH, bind_arguments, call_method,
                                       dotted, is_none, is_true, keyword_arg)

if TYPE_CHECKING:
    from typing import Any, Callable

    from lint_rules.analysis.scopes import ScopeModel as FileModel

OPTIMIZER = "optimizer"
SCALER = "scaler"
SCHEDULER = "scheduler"
SAMPLER = "sampler"
LOADER = "loader"
CRITERION = "criterion"
LOSS = "loss"
MODULE = "module"
PARAMETER = "parameter"
LEAF = "leaf"
TENSOR = "tensor"
DISTRIBUTED_OPTIMIZER = "distributed-optimizer"

TENSOR_METHODS = frozenset(
    "sum mean max min norm abs sqrt exp log argmax argmin float double half long int "
    "detach clone view reshape squeeze unsqueeze flatten softmax log_softmax pow mul add "
    "sub div matmul to cuda contiguous std var masked_fill eq ne gt lt ge le sigmoid "
    "tanh relu permute transpose t".split())

_OPT_HINT = re.compile(r"(^|[._])(optim|optimizer|optimiser|opt)(s?)([_\d]|$)|optimizer", re.I)
_SCALER_HINT = re.compile(r"(^|[._])(grad_)?scaler([_\d]|$)", re.I)
_SCHED_HINT = re.compile(r"sched|lr_scheduler", re.I)
_MODULE_HINT = re.compile(r"^(model|net|network|module)$|_(model|net)$|^(model|net)_", re.I)
# A name that starts with a verb names what does something to a model, not the model:
# `build_model`, `evaluate_model`, `update_registry_for_model`, `load_net` are functions.
_VERB_PHRASE = re.compile(
    r"^_*(get|build|load|create|make|init|initialize|evaluate|update|save|run|setup|set|prepare|wrap|unwrap|train|"
    r"apply|freeze|unfreeze|compile|export|convert|register|print|log|plot|validate|fit|check|copy|clone|"
    r"restore|resume|download|fetch|reset|sync|broadcast|average|compute|calc|calculate|count|parse|"
    r"process|instantiate|construct|define|deploy|serve|infer|use|is|has|do|show|dump|summarize|describe|"
    r"find|select|replace|patch|merge|split|move|push|pull|send|upload|attach|detach|cast|quantize|prune|"
    r"trace|script|profile|benchmark|measure|visualize|draw|render|write|read|open|close|add|remove|del|"
    r"delete|inspect|verify|assert|ensure|maybe|try|to)_", re.I)
# Names spelled like a model or an optimizer that hold something about one. The last word of a
# compound name says what it holds: `model_output`, `model_config`, `net_sd`, `optimizer_idx` and
# `model_path` are an output, a config, a state dict, an index and a path, where `model_ema` and `net_g`
# are models. The one answer to "does this spelling name data?" (modules.ModuleFacts asks it too).
NOT_AN_OBJECT_NAME = re.compile(
    r"state|dict|path|file|name|dir|cfg|config|ckpt|checkpoint|weight|param|args|kwargs|type|cls|"
    r"class|str|url|_id$|_ids$|fn$|func|factory|builder|registry|kind|option|opts$|spec|version|"
    r"_(outputs?|outs?|data|datasets?|results?|preds?|predictions?|logits|feats?|features|loss(es)?|sd|"
    r"scores?|inputs?|targets?|metrics|stats|info|grads?|samples?|keys?|size|dim|list|lr|steps?|epochs?|"
    r"idx|index)$", re.I)
# Data held out for measuring, by its spelling: `val_loader`, `testdataloader`, `dev_sampler`, `eval_iter`.
HELD_OUT_NAME = re.compile(r"(^|_)(val|dev|eval)|test|valid", re.I)


def name_hint(text: str | None) -> str | None:
    """Last-resort guess from a variable's spelling."""
    if not text:
        return None
    owner, _, leaf = text.rpartition(".")
    if owner and owner.rsplit(".", 1)[-1][:1].isupper():
        return None  # ModelRegistry.model_families: an attribute of a class, not a value spelled like one
    if NOT_AN_OBJECT_NAME.search(leaf):
        return None
    if _SCHED_HINT.search(leaf):
        return SCHEDULER
    if _SCALER_HINT.search(leaf):
        return SCALER
    if _OPT_HINT.search(leaf):
        return OPTIMIZER
    if _MODULE_HINT.search(leaf) and not _VERB_PHRASE.search(leaf):
        return MODULE
    return None


def kind_of(model: "FileModel", expr: cst.CSTNode, _depth: int = 0) -> str | None:
    key = id(expr)
    cache = model._kind_cache
    if key in cache:
        return cache[key]
    cache[key] = None  # cycle guard
    result = _kind_of(model, expr, _depth) if _depth < 10 else None
    cache[key] = result
    return result


def _kind_of(model: "FileModel", expr: cst.CSTNode, depth: int) -> str | None:
    if isinstance(expr, (cst.Name, cst.Attribute)):
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("weight", "bias"):
            if kind_of(model, expr.value, depth + 1) == MODULE:
                return PARAMETER
        if isinstance(expr, cst.Attribute) and expr.attr.value == "sampler":
            if kind_of(model, expr.value, depth + 1) == LOADER:
                return SAMPLER
        return _kind_from_bindings(model, expr, model.bindings_of(expr), depth)
    if isinstance(expr, cst.Call):
        return _call_kind(model, expr, depth)
    if isinstance(expr, cst.BinaryOperation):
        left = kind_of(model, expr.left, depth + 1)
        right = kind_of(model, expr.right, depth + 1)
        if LOSS in (left, right):
            return LOSS
        if TENSOR in (left, right) or LEAF in (left, right) or PARAMETER in (left, right):
            return TENSOR
        return None
    if isinstance(expr, cst.UnaryOperation):
        return kind_of(model, expr.expression, depth + 1)
    if isinstance(expr, cst.Subscript):
        item = _container_item(model, expr, depth)
        if item is not None:
            return kind_of(model, item, depth + 1)
        inner = kind_of(model, expr.value, depth + 1)
        return TENSOR if inner in (TENSOR, LOSS, LEAF, PARAMETER) else None
    return None


def _container_item(model: "FileModel", expr: cst.Subscript, depth: int) -> cst.CSTNode | None:
    """The element that ``models["generator"]`` / ``pair[0]`` reads from a dict, list or tuple
    literal bound once to the subscripted name."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index) \
            or not isinstance(expr.value, (cst.Name, cst.Attribute)):
        return None
    key = expr.slice[0].slice.value
    bindings = model.bindings_of(expr.value)
    if not bindings or len(bindings) != 1 or bindings[0].kind != ASSIGN:
        return None
    container = bindings[0].value
    if isinstance(container, cst.Call) and model.qualified_name(container.func) == "builtins.dict":
        if isinstance(key, cst.SimpleString):
            arg = keyword_arg(container, key.evaluated_value)
            return arg.value if arg is not None else None
        return None
    if isinstance(container, cst.Dict) and isinstance(key, cst.SimpleString):
        for el in container.elements:
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString) \
                    and el.key.evaluated_value == key.evaluated_value:
                return el.value
        return None
    if isinstance(container, (cst.List, cst.Tuple)) and isinstance(key, cst.Integer):
        index = int(key.value)
        if all(isinstance(el, cst.Element) for el in container.elements) and index < len(container.elements):
            return container.elements[index].value
    return None


def kind_at(model: "FileModel", expr: cst.CSTNode, at: cst.CSTNode) -> str | None:
    """Kind of ``expr`` where ``at`` runs: for a Name, only the bindings that can reach
    ``at`` count, so a later ``x = torch.zeros(3, requires_grad=True)`` does not make an
    earlier ``x`` a leaf."""
    if not isinstance(expr, cst.Name):
        return kind_of(model, expr)
    return _kind_from_bindings(model, expr, model.reaching_bindings(expr, at), 0)


def _kind_from_bindings(model: "FileModel", expr: cst.CSTNode, bindings, depth: int) -> str | None:
    kinds = set()
    if bindings:
        for b in bindings:
            kinds.add(_binding_kind(model, b, depth, expr))
    kinds.discard(None)
    if (not kinds or kinds == {TENSOR}) and isinstance(expr, cst.Name) and model.is_backward_receiver(expr):
        return LOSS  # whatever else it is, what backward() is called on is a loss
    if len(kinds) == 1:
        return kinds.pop()
    if not kinds:
        if any(b.kind == PARAM and declares_plain_data(model, b.node, b.value) for b in bindings or ()):
            return None  # `model (dict): ...`: the author said what it holds, the name says less
        return name_hint(dotted(expr))
    if kinds <= {LOSS, TENSOR}:
        return LOSS
    return None


def _binding_kind(model: "FileModel", b, depth: int, expr: cst.CSTNode) -> str | None:
    if b.kind in (ASSIGN, WITH) and b.value is not None:
        return kind_of(model, b.value, depth + 1)
    if b.kind == FOR and b.value is not None:
        kind = _iterated_kind(model, b.value, depth)
        target = getattr(b.node, "target", None)
        if kind is not None and isinstance(target, (cst.Tuple, cst.List)):
            # `for name, p in named_parameters()`: only the last element is the tensor
            last = target.elements[-1].value
            if not (isinstance(last, cst.Name) and isinstance(expr, cst.Name) and last.value == expr.value):
                return None
        return kind
    if b.kind == PARAM:
        param = b.node
        if isinstance(param, cst.Param) and param.annotation is not None:
            q = model.qualified_name(param.annotation.annotation)
            if q is not None:
                return _class_kind(model, q)
        if isinstance(param, cst.Param) and param.default is not None and not is_none(param.default):
            return kind_of(model, param.default, depth + 1)  # loss_fn=nn.CrossEntropyLoss()
        if isinstance(param, cst.Param) and isinstance(b.value, cst.FunctionDef):
            return _call_site_kind(model, param, b.value, depth)
        return None
    return None


# Types that hold plain data, never a module, optimizer or tensor: a parameter declared as one of them
# (annotation or docstring) is not guessed from its name.
_PLAIN_DATA_TYPES = frozenset(
    "dict Dict OrderedDict Mapping MutableMapping DefaultDict defaultdict TypedDict list List tuple Tuple "
    "Sequence set Set frozenset FrozenSet str bytes int float bool Path PathLike".split())
_PLAIN_DATA_QUALIFIED = re.compile(r"^(builtins|typing|collections(\.abc)?|pathlib|os)\.(\w+)$")


def _plain_data_type(text: str) -> bool:
    """``dict``, ``Dict[str, Any]``, ``dict, optional``, ``Optional[dict]``, ``str or Path``: every
    alternative the text names is plain data."""
    text = re.sub(r"\b(optional|Optional|None|NoneType|typing\.|collections\.abc\.|collections\.|os\.|pathlib\.)\b",
                  " ", text)
    text = re.sub(r"\[.*\]", " ", text)  # element types say nothing about the container
    words = [w for w in re.split(r"[\s,|]+|\bor\b", text) if w]
    return bool(words) and all(w in _PLAIN_DATA_TYPES for w in words)


def declares_plain_data(model: "FileModel", param: cst.CSTNode, fn: cst.CSTNode | None) -> bool:
    """``param`` of ``fn`` is declared to hold plain data (a dict, a list, a string, a path...): by
    its annotation (``model: dict``) or by the function's docstring, Google style (``model (dict):
    ...``), NumPy style (``model : Dict[str, Any]``) or Sphinx style (``:type model: dict``)."""
    if not isinstance(param, cst.Param):
        return False
    if param.annotation is not None:
        annotation = param.annotation.annotation
        q = model.qualified_name(annotation) if isinstance(annotation, (cst.Name, cst.Attribute)) else None
        match = _PLAIN_DATA_QUALIFIED.match(q or "")
        if match is not None:
            return match.group(3) in _PLAIN_DATA_TYPES
        if isinstance(annotation, cst.SimpleString):
            return _plain_data_type(annotation.evaluated_value or "")
        if isinstance(annotation, cst.Subscript):
            return _plain_data_type(dotted(annotation.value) or "")
        return False
    declared = documented_type(fn, param.name.value) if isinstance(fn, cst.FunctionDef) else None
    return declared is not None and _plain_data_type(declared)


def documented_type(fn: cst.FunctionDef, name: str) -> str | None:
    """The type ``fn``'s docstring gives its parameter ``name``, as written, or None."""
    doc = fn.get_docstring(clean=True)
    if not doc:
        return None
    word = re.escape(name)
    for pattern in (rf"^\s*{word}\s*\(([^)\n]+)\)\s*:",  # Google: name (type): text
                    rf"^\s*{word}\s+:\s+(\S[^\n]*)$",  # NumPy: name : type
                    rf":type\s+{word}\s*:\s*([^\n]+)",  # Sphinx: :type name: type
                    rf":param\s+(\w[\w\[\], .]*?)\s+{word}\s*:"):  # Sphinx: :param type name:
        match = re.search(pattern, doc, re.M)
        if match is not None:
            return match.group(1).strip()
    return None


def _call_site_kind(model: "FileModel", param: cst.Param, fn: cst.FunctionDef, depth: int) -> str | None:
    """The kind every call of ``fn`` passes for ``param``, when they all agree.

    ``train(model, loader, criterion, optimizer)`` called from ``main()`` with a model, a
    loader, a loss module and an optimizer gives each parameter that kind. A call that
    passes something of unknown kind, or nothing (the parameter keeps no default here),
    leaves the parameter unknown; so does a function this file never calls.
    """
    if depth >= 6:
        return None
    project = getattr(model, "project_facts", None)
    return agreed_at_call_sites(model, param, fn, lambda arg: kind_of(model, arg, depth + 1),
                                project.call_kinds if project is not None else None)


# The facts a summarised call records of each module argument, by index (summary._imported_calls,
# ProjectFacts.call_facts): whether it is mode-dependent, the class that built it, what calling it returns.
ARG_MODE, ARG_CLASS, ARG_OUTPUT = 0, 1, 2


def agreed_at_call_sites(model: "FileModel", param: cst.Param, fn: cst.FunctionDef,
                         of_argument: Callable[[cst.CSTNode], Any],
                         remote: Callable[[str], list[tuple[list, dict]] | None] | None) -> Any:
    """What every call of ``fn`` in the project says of the argument it passes for ``param``, when
    they all agree and none says None: the one answer to "what does this parameter hold?", for any
    fact of a value (its kind, whether the module it holds depends on the train/eval mode).

    ``of_argument(expr)`` answers for an argument of a call in this file; ``remote(fn_name)`` gives,
    for a top-level function, the summarised answers of the calls in the project's other files (a
    list of positional answers and keyword answers per call, None when they cannot be known:
    :meth:`~lint_rules.analysis.cross_file.ProjectFacts.call_kinds`). A call that passes nothing
    for the parameter, a function called from more than :data:`_MAX_CALL_SITES` places (a
    utility) or never called, leaves it unknown (None).
    """
    name = param.name.value
    if name in ("self", "cls"):
        return None
    sites = model.call_sites(fn)
    if len(sites) > _MAX_CALL_SITES:
        return None
    found: list = []
    for call in sites:
        if model.is_inside(call, fn):
            continue  # a recursive call passes what the function already has
        arg = bind_arguments(call, fn).get(name)
        answer = of_argument(arg) if arg is not None else None
        if answer is None or (found and answer != found[0]):
            return None
        found.append(answer)
    if remote is not None and model.parent(fn) is model.module:
        calls = remote(fn.name.value)
        if calls is None:
            return None
        for args, kwargs in calls:
            answer = _passed_kind(fn, param, args, kwargs)
            if answer is None or (found and answer != found[0]):
                return None
            found.append(answer)
    return found[0] if found else None


def _passed_kind(fn: cst.FunctionDef, param: cst.Param, args: list, kwargs: dict) -> Any:
    """What a summarised call (positional and keyword answers) passes for ``param``."""
    name = param.name.value
    positional = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if name in positional:
        index = positional.index(name)
        if "*" in args[:index + 1]:
            return None
        if index < len(args):
            return args[index]
    if name in kwargs and name not in [p.name.value for p in fn.params.posonly_params]:
        return kwargs[name]
    return None  # not passed, or through **kwargs: its default, whose kind was asked first


_MAX_CALL_SITES = 16  # a helper called from more places than this is a utility: its parameters vary


def _iterated_kind(model: "FileModel", iterable: cst.CSTNode, depth: int) -> str | None:
    """Kind of the loop variable of ``for x in <iterable>``."""
    method = call_method(iterable)
    if method == "parameters":
        return PARAMETER
    if method == "named_parameters":
        return PARAMETER  # the tuple's second element; targets are checked by the caller
    if isinstance(iterable, (cst.List, cst.Tuple)) and iterable.elements:
        # for m in [generator, discriminator]
        kinds = {kind_of(model, el.value, depth + 1) if isinstance(el, cst.Element) else None
                 for el in iterable.elements}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(iterable, (cst.Name, cst.Attribute)):
        inner = kind_of(model, iterable, depth + 1)
        if inner in (TENSOR, LOSS, LEAF, PARAMETER):
            return TENSOR  # for row in probabilities: the rows of a tensor
        return None
    if isinstance(iterable, cst.Subscript):
        # for p in group["params"]
        for el in iterable.slice:
            idx = el.slice
            if isinstance(idx, cst.Index) and isinstance(idx.value, cst.SimpleString) \
                    and idx.value.evaluated_value == "params":
                return PARAMETER
    return None


def _class_kind(model: "FileModel", q: str) -> str | None:
    if N.is_optimizer_class(q):
        return OPTIMIZER
    if q.startswith("torch.distributed.optim."):
        return DISTRIBUTED_OPTIMIZER  # steps a distributed autograd context, not .grad
    if q in N.GRAD_SCALERS:
        return SCALER
    if q.startswith("torch.optim.lr_scheduler."):
        return SCHEDULER
    if q in N.DISTRIBUTED_SAMPLERS:
        return SAMPLER
    if q in N.DATA_LOADERS:
        return LOADER
    if q == N.PARAMETER:
        return PARAMETER
    if q in ("torch.Tensor",):
        return TENSOR
    if q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper():
        return CRITERION if q.endswith("Loss") else MODULE
    if q.startswith("torch.nn.parallel.") and q.endswith("DataParallel") or q == N.DATA_PARALLEL:
        return MODULE
    return None


def _local_class_kind(model: "FileModel", classdef: cst.ClassDef, depth: int) -> str | None:
    for base in classdef.bases:
        q = model.qualified_name(base.value)
        if q is not None:
            k = _class_kind(model, q)
            if k is not None:
                return k
        elif isinstance(base.value, cst.Name) and depth < 6:
            bindings = model.bindings_of(base.value)
            if bindings and len(bindings) == 1 and bindings[0].kind == CLASS:
                k = _local_class_kind(model, bindings[0].value, depth + 1)
                if k is not None:
                    return k
    return None


def _call_kind(model: "FileModel", call: cst.Call, depth: int) -> str | None:
    func = call.func
    q = model.qualified_name(func)
    if q is not None:
        k = _class_kind(model, q)
        if k is not None:
            return k
        if q in N.TENSOR_FACTORIES or q in N.VARIABLE:
            arg = keyword_arg(call, "requires_grad")
            return LEAF if arg is not None and is_true(arg.value) else TENSOR
        if N.is_loss_function(q):
            return LOSS
        if q.startswith("torch.") and q not in N.NON_TENSOR_TORCH and q.rsplit(".", 1)[1][:1].islower() \
                and not q.startswith(("torch.distributed.", "torch.cuda.", "torch.backends.",
                                      "torch.utils.", "torch.optim.", "torch.jit.", "torch.nn.init.")):
            return TENSOR
        return _project_class_kind(model, func)
    if isinstance(func, cst.Name):
        bindings = model.bindings_of(func)
        if bindings and len(bindings) == 1:
            b = bindings[0]
            if b.kind == CLASS:
                return _local_class_kind(model, b.value, depth)
            if b.kind == DEF:
                return None
        callee = kind_of(model, func, depth + 1)
    elif isinstance(func, cst.Attribute):
        method = func.attr.value
        receiver = kind_of(model, func.value, depth + 1)
        if method == "requires_grad_" and receiver in (TENSOR, LEAF):
            if not call.args or is_true(call.args[0].value):
                return LEAF
        if "optimizer" in method.lower() and method.startswith(("configure", "create", "build", "make", "get")):
            return OPTIMIZER
        if receiver == MODULE and method in ("to", "cuda", "cpu", "train", "eval", "double", "float", "half"):
            return MODULE
        if receiver in (TENSOR, LEAF, PARAMETER, LOSS) and method in TENSOR_METHODS:
            return LOSS if receiver == LOSS and method not in ("detach", "item") else TENSOR
        if receiver == SCALER and method == "scale":
            return LOSS
        callee = receiver if method == "forward" else None
    else:
        callee = None
    if callee == CRITERION:
        return LOSS
    if callee == MODULE:
        return TENSOR
    return None


def _project_class_kind(model: "FileModel", func: cst.CSTNode) -> str | None:
    """``Encoder(...)`` where ``Encoder`` is a class of another file of the project that subclasses
    ``nn.Module`` (through any chain of the project's own bases): the project summaries say."""
    project = getattr(model, "project_facts", None)
    if project is None or not isinstance(func, (cst.Name, cst.Attribute)):
        return None
    if not project.is_module_class(model, func):
        return None
    # a loss module, spelled as torch spells its own (`nn.CrossEntropyLoss`, `PITLossWrapper`)
    return CRITERION if "Loss" in (dotted(func) or "").rsplit(".", 1)[-1] else MODULE
