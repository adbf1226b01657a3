"""Facts about ``nn.Module`` subclasses and instances, shared by the TRN4xx/TRN604/TRN702 rules.

A class is a module class when one of its bases resolves (through imports and
aliases) to ``torch.nn.Module`` or another ``torch.nn`` module class, to a
well-known third-party module base (``LightningModule``, ``PreTrainedModel``), or
to a class defined in the same file that is a module class. A base that resolves
to nothing known (imported from elsewhere) counts only when its name ends in
``Module`` or the class defines ``forward``: precision over recall.
"""

from __future__ import annotations

import builtins
import re
from typing import TYPE_CHECKING

import libcst as cst

from lint_rules.analysis.kinds import CRITERION, MODULE, NOT_AN_OBJECT_NAME, agreed_at_call_sites, kind_of
from lint_rules.analysis.scopes import ASSIGN, CLASS, FOR, PARAM, WITH, call_method, dotted

if TYPE_CHECKING:
    from lint_rules.analysis.model import FileModel

# torch.nn.<Upper> names that are not modules.
_NN_NOT_MODULES = frozenset({
    "torch.nn.Parameter", "torch.nn.Buffer", "torch.nn.UninitializedParameter",
    "torch.nn.UninitializedBuffer",
})
_OTHER_MODULE_BASES = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel",
    "torch.jit.ScriptModule", "torch.nn.modules.Module", "torch.nn.modules.module.Module",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
    "lightning.LightningModule", "lightning.pytorch.LightningModule",
    "lightning.pytorch.core.LightningModule",
    "transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel",
})
# Module bases that register no buffer or parameter by name (as the project summaries' plain bases).
_REGISTERS_NOTHING = frozenset({
    "torch.nn.Module", "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
    "lightning.LightningModule", "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
})
# Containers whose construction registers what is passed to them.
_REGISTERING = frozenset({
    "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Sequential",
    "torch.nn.ParameterList", "torch.nn.ParameterDict",
})
# A base named like a module class (`LightningModule`, `MegatronModule`), but not a data module
# (`LightningDataModule` holds loaders, not layers).
_UNKNOWN_MODULE_BASE = re.compile(r"(?<!Data)Module$")
# Classes of installed packages that are never modules, whatever they define (a `KTOTrainer` subclass
# with a `forward()` is a trainer): asked only of a base that nothing else answers for.
_UNKNOWN_NON_MODULE_BASE = re.compile(r"(Trainer|Callback|Dataset|Sampler|Config|Tokenizer|Optimizer|Scheduler)$")
# torch.nn layers whose forward depends on train/eval mode.
_MODE_DEPENDENT = re.compile(r"Dropout|BatchNorm|InstanceNorm|RNN|LSTM|GRU|Transformer|MultiheadAttention|RReLU")
_SAME_MODULE_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "double", "eval", "train"})
# Wrappers whose forward is the wrapped module's: as mode-dependent as it.
_WRAPPERS = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                       "torch.nn.parallel.DistributedDataParallel",
                       "torch.nn.parallel.distributed.DistributedDataParallel"})
# Methods of a mapping (a state dict) that a model does not have (an nn.ModuleDict aside).
_MAPPING_METHODS = frozenset({"keys", "items", "values"})
_SELF_REGISTERING_METHODS = frozenset({"register_buffer", "register_parameter", "add_module",
                                       "register_module"})


def is_torch_module_class_name(q: str) -> bool:
    """True for canonical names of ``torch.nn`` module classes (``torch.nn.Linear``)."""
    if q in _OTHER_MODULE_BASES:
        return True
    return (q.startswith("torch.nn.") and q.count(".") == 2 and q.rsplit(".", 1)[1][:1].isupper()
            and q not in _NN_NOT_MODULES)


# The methods a module call runs: ``module(x)`` calls ``__call__``, which calls ``forward``.
_FORWARD_METHODS = frozenset({"forward", "__call__"})
# Methods only an nn.Module has (an optimizer has state_dict() and zero_grad(), a tensor to() and
# requires_grad_(), a Lightning or gym object train()/eval()): calling one says what the receiver is.
_MODULE_ONLY_METHODS = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
    "children", "named_children", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "register_full_backward_pre_hook",
})


class ModuleFacts:
    """Per-file facts; get the shared instance with :func:`facts`."""

    def __init__(self, model: "FileModel") -> None:
        self.model = model
        self._module_class: dict[int, bool | None] = {}
        self._scope_calls: dict[int, list[cst.Call]] | None = None
        self._module_uses: set[tuple[int, str, str]] | None = None

    # ---------------------------------------------------------------- classes
    def is_module_class(self, classdef: cst.ClassDef) -> bool:
        return self._class_verdict(classdef, 0) is True

    def _class_verdict(self, classdef: cst.ClassDef, depth: int) -> bool | None:
        """True: a module class; False: known not to be; None: its bases are unknown."""
        key = id(classdef)
        if key in self._module_class:
            return self._module_class[key]
        self._module_class[key] = None  # cycle guard
        verdict: bool | None = False
        for arg in classdef.bases:
            base = self._base_verdict(arg.value, depth)
            if base is True:
                verdict = True
                break
            if base is None:
                verdict = None
        if verdict is None and defines(classdef, "forward"):
            verdict = True  # an unknown base, and a forward(): a module by its shape
        self._module_class[key] = verdict
        return verdict

    def _base_verdict(self, base: cst.BaseExpression, depth: int) -> bool | None:
        """True: a module class; False: known not to be; None: unknown."""
        model = self.model
        q = model.qualified_name(base)
        if q is not None:
            if is_torch_module_class_name(q):
                return True
            if q.startswith(("torch.", "builtins.", "typing.", "abc.", "enum.", "collections.",
                             "dataclasses.", "sklearn.", "numpy.", "pandas.")):
                return False  # (torch.nn's module classes were answered above)
            if _UNKNOWN_MODULE_BASE.search(q):
                return True
            # A class of another file of the project: its summary says (through its own bases).
            project = getattr(model, "project_facts", None)
            verdict = project.is_module_class(model, base) if project is not None else None
            if verdict is None and _UNKNOWN_NON_MODULE_BASE.search(q):
                return False
            return verdict
        if isinstance(base, cst.Name):
            bindings = model.bindings_of(base)
            if bindings and len(bindings) == 1 and bindings[0].kind == CLASS and depth < 8:
                return self._class_verdict(bindings[0].value, depth + 1)
            if not bindings and isinstance(getattr(builtins, base.value, None), type):
                return False  # `class Cat(object)`, `class Registry(dict)`: a builtin class is no module
        text = dotted(base) if isinstance(base, (cst.Name, cst.Attribute)) else None
        if text is not None and _UNKNOWN_MODULE_BASE.search(text):
            return True
        return None

    # ------------------------------------------------------ mode dependence
    def mode_dependent(self, expr: cst.CSTNode, _depth: int = 0) -> bool | None:
        """Does the module ``expr`` holds behave differently in train and eval mode?

        True: it has dropout, batch norm, ... (or reads ``self.training``); False: every
        layer is known and none is (``nn.Linear``, an MLP of this file); None: unknown."""
        if _depth > 6:
            return None
        model = self.model
        if isinstance(expr, cst.Call):
            q = model.qualified_name(expr.func)
            if q in _WRAPPERS:
                wrapped = expr.args[0].value if expr.args and expr.args[0].keyword is None else None
                return self.mode_dependent(wrapped, _depth + 1) if wrapped is not None else None
            if q is not None and is_torch_module_class_name(q):
                if _MODE_DEPENDENT.search(q):
                    return True
                if q in _REGISTERING:
                    verdicts = [self.mode_dependent(a.value, _depth + 1) for a in expr.args]
                    return _combine(verdicts)
                return False
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_MODULE_METHODS:
                return self.mode_dependent(expr.func.value, _depth + 1)
            if isinstance(expr.func, cst.Name):
                bindings = model.bindings_of(expr.func)
                if bindings and len(bindings) == 1 and bindings[0].kind == CLASS:
                    return self.class_mode_dependent(bindings[0].value, _depth + 1)
            project = getattr(model, "project_facts", None)
            if project is not None and isinstance(expr.func, (cst.Name, cst.Attribute)):
                return project.class_mode_dependent(model, expr.func)  # a class of another project file
            return None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            bindings = model.bindings_of(expr)
            if bindings and all(b.kind == ASSIGN and b.value is not None for b in bindings):
                return _combine([self.mode_dependent(b.value, _depth + 1) for b in bindings])
            if bindings and len(bindings) == 1 and bindings[0].kind == PARAM \
                    and isinstance(bindings[0].node, cst.Param) and isinstance(bindings[0].value, cst.FunctionDef):
                # evaluate(model, loader): what every caller in the project passes, when they agree
                from lint_rules.analysis.kinds import ARG_MODE, agreed_at_call_sites

                project = getattr(model, "project_facts", None)
                return agreed_at_call_sites(model, bindings[0].node, bindings[0].value,
                                            lambda arg: self.mode_dependent(arg, _depth + 1),
                                            project.call_facts(ARG_MODE) if project is not None else None)
        return None

    def imported_class(self, expr: cst.CSTNode, _seen: frozenset = frozenset()) -> str | None:
        """The dotted name, as this file spells it, of the imported class that built the module
        ``expr`` holds (``net = Classifier(...)``; ``nn.DataParallel(net)`` and ``net.to(device)`` are
        its module's), when it is a name imported from another module; None otherwise or when the
        bindings of a name disagree. A summary records it so that a file which imports this one can
        look the class up (the class's own summary says the rest)."""
        if len(_seen) > 6:
            return None
        model = self.model
        if isinstance(expr, cst.Call):
            if model.qualified_name(expr.func) in _WRAPPERS:
                wrapped = expr.args[0].value if expr.args and expr.args[0].keyword is None else None
                return self.imported_class(wrapped, _seen) if wrapped is not None else None
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_MODULE_METHODS:
                return self.imported_class(expr.func.value, _seen)
            head = expr.func
            while isinstance(head, cst.Attribute):
                head = head.value
            bindings = model.bindings_of(head) if isinstance(head, cst.Name) else None
            if bindings and len(bindings) == 1 and isinstance(bindings[0].node, (cst.Import, cst.ImportFrom)) \
                    and not (model.qualified_name(expr.func) or "torch.").startswith("torch."):
                return dotted(expr.func)
            return None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            bindings = model.bindings_of(expr)
            if not bindings or not all(b.kind == ASSIGN and b.value is not None for b in bindings):
                return None
            # net = Classifier(); net = nn.DataParallel(net): a binding that leads back to the same
            # name is the same module, wrapped or moved
            answers = {self.imported_class(b.value, _seen | {id(b)}) for b in bindings if id(b) not in _seen}
            return answers.pop() if len(answers) == 1 else None
        return None

    def torch_class(self, expr: cst.CSTNode, _depth: int = 0) -> str | None:
        """The qualified name of the torch module class that built ``expr`` (``nn.CrossEntropyLoss()``,
        or a variable every binding of which is one), or None."""
        if _depth > 6:
            return None
        model = self.model
        if isinstance(expr, cst.Call) and isinstance(expr.func, (cst.Name, cst.Attribute)):
            q = model.qualified_name(expr.func)
            return q if q is not None and is_torch_module_class_name(q) else None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            bindings = model.bindings_of(expr)
            if bindings and all(b.kind == ASSIGN and b.value is not None for b in bindings):
                answers = {self.torch_class(b.value, _depth + 1) for b in bindings}
                return answers.pop() if len(answers) == 1 else None
        return None

    def class_mode_dependent(self, classdef: cst.ClassDef, _depth: int = 0) -> bool | None:
        model = self.model
        for base in classdef.bases:
            q = model.qualified_name(base.value)
            if q in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                continue
            if isinstance(base.value, cst.Name):
                bindings = model.bindings_of(base.value)
                if bindings and len(bindings) == 1 and bindings[0].kind == CLASS and _depth < 6:
                    if self.class_mode_dependent(bindings[0].value, _depth + 1) is not False:
                        return None if q is None else True
                    continue
            return None  # a base out of sight may hold any layer
        verdicts: list[bool | None] = []
        for node in model.within(cst.Attribute, classdef):
            if node.attr.value == "training" and isinstance(node.value, cst.Name) \
                    and node.value.value == "self":
                return True
        for call in model.within(cst.Call, classdef):
            q = model.qualified_name(call.func)
            if q is not None:
                if q.startswith("torch.nn.functional.") and "dropout" in q:
                    return True
                if is_torch_module_class_name(q):
                    verdicts.append(bool(_MODE_DEPENDENT.search(q)))
                elif not q.startswith(("torch.", "builtins.", "math.", "typing.")):
                    verdicts.append(None)  # an imported layer class or factory
                continue
            if isinstance(call.func, cst.Name):
                bindings = model.bindings_of(call.func)
                if bindings and len(bindings) == 1 and bindings[0].kind == CLASS:
                    if bindings[0].value is not classdef:
                        verdicts.append(self.class_mode_dependent(bindings[0].value, _depth + 1))
                else:
                    verdicts.append(None)  # a layer class or factory from elsewhere
        return _combine(verdicts)

    def method_of(self, func: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose body defines ``func`` directly, else None."""
        if not isinstance(func, cst.FunctionDef):
            return None
        block = self.model.parent(func)
        cls = self.model.parent(block) if isinstance(block, cst.IndentedBlock) else None
        return cls if isinstance(cls, cst.ClassDef) else None

    def enclosing_method(self, node: cst.CSTNode) -> tuple[cst.FunctionDef, cst.ClassDef] | None:
        """The method (defined directly in a class body) that ``node`` runs in, with its class.

        Nested functions and lambdas inside a method count as the method.
        """
        for a in self.model.ancestors(node):
            if isinstance(a, cst.FunctionDef):
                cls = self.method_of(a)
                if cls is not None:
                    return a, cls
            elif isinstance(a, cst.ClassDef):
                return None
        return None

    def runs_in_forward(self, method: cst.FunctionDef, classdef: cst.ClassDef) -> bool:
        """``method`` is the class's ``forward`` (or ``__call__``), or a method of the class that one
        of them calls through ``self.<name>(...)``, directly or through other such methods: it runs
        in every forward pass, in training and in evaluation alike."""
        body = classdef.body
        if not isinstance(body, cst.IndentedBlock):
            return False
        methods = {s.name.value: s for s in body.body if isinstance(s, cst.FunctionDef)}
        todo = [m for name, m in methods.items() if name in _FORWARD_METHODS]
        seen: set[int] = set()
        while todo:
            fn = todo.pop()
            if fn is method:
                return True
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            for call in self.model.within(cst.Call, fn):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value in methods and self.is_self(func.value, fn):
                    todo.append(methods[func.attr.value])
        return False

    def module_method(self, node: cst.CSTNode) -> tuple[cst.FunctionDef, cst.ClassDef] | None:
        """Like :meth:`enclosing_method`, only for methods of module classes."""
        found = self.enclosing_method(node)
        if found is not None and self.is_module_class(found[1]):
            return found
        return None

    # ------------------------------------------------------------- instances
    def is_self(self, expr: cst.CSTNode, method: cst.FunctionDef) -> bool:
        """``expr`` is the method's first parameter (``self``), not rebound."""
        if not isinstance(expr, cst.Name) or not method.params.params:
            return False
        if expr.value != method.params.params[0].name.value:
            return False
        bindings = self.model.bindings_of(expr)
        return bool(bindings) and all(b.kind == PARAM and b.value is method for b in bindings)

    def is_module_value(self, expr: cst.CSTNode) -> bool:
        """``expr`` holds an ``nn.Module`` instance (not a class, not a state dict)."""
        model = self.model
        if isinstance(expr, cst.Name):
            found = self.module_method(expr)
            if found is not None and self.is_self(expr, found[0]):
                return True
        if isinstance(expr, cst.Subscript):
            return self.is_module_container(expr.value)
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return kind_of(model, expr) in (MODULE, CRITERION)
        if model.qualified_name(expr) is not None:
            return False  # an imported name: a class or a library function
        constructed = False
        loads = other = 0  # assignments from torch.load(...) / from anything else but its own transform
        name = dotted(expr)
        for b in model.bindings_of(expr) or ():
            if b.kind == CLASS:
                return False
            if b.kind in (ASSIGN, WITH) and b.value is not None:
                if _not_a_module(b.value):
                    return False
                constructed = constructed or (kind_of(model, b.value) in (MODULE, CRITERION)
                                              and not _named_not_a_module(b.value))
                if isinstance(b.value, cst.Call) and dotted(b.value.func) == "torch.load":
                    loads += 1
                elif not (isinstance(b.value, cst.Call) and any(dotted(a.value) == name for a in b.value.args)):
                    other += 1
        if constructed:
            return True
        if loads and not other:
            # `x = torch.load(path)`, maybe passed through helpers (`x = fill(x)`), and nothing else:
            # whatever was saved, a checkpoint dict as often as a module, so the name proves nothing
            return False
        if kind_of(model, expr) in (MODULE, CRITERION):
            # known from an annotation, or guessed from the name: `model_state` is not a model
            # and `converted_model.keys()` says a state dict: the name is the only evidence, its uses outweigh it
            return not NOT_AN_OBJECT_NAME.search((dotted(expr) or "").rsplit(".", 1)[-1]) \
                and not self._used_as(expr, _MAPPING_METHODS) and not self._handed_data(expr)
        return self._from_module_container(expr) or self.used_as_module(expr)

    def used_as_module(self, expr: cst.CSTNode) -> bool:
        """The file calls a method only an ``nn.Module`` has on the value ``expr`` holds: on the same
        local name in its function (``critic.parameters()``), or on the same ``self.<attr>`` in any
        method of its class (``self.actor.parameters()`` given to an optimizer in ``__init__``)."""
        return self._used_as(expr, _MODULE_ONLY_METHODS)

    def _handed_data(self, expr: cst.CSTNode) -> bool:
        """``expr`` is a parameter spelled like a model that every call of its function in the file
        fills with a value spelled as data about one (``save_to_file(path, state_dict)`` for
        ``def save_to_file(name, model)``): the callers' spelling outweighs the parameter's."""
        if not isinstance(expr, cst.Name):
            return False
        bindings = self.model.bindings_of(expr) or ()
        if len(bindings) != 1 or bindings[0].kind != PARAM or not isinstance(bindings[0].value, cst.FunctionDef):
            return False
        return agreed_at_call_sites(
            self.model, bindings[0].node, bindings[0].value,
            lambda arg: True if isinstance(arg, (cst.Name, cst.Attribute))
            and NOT_AN_OBJECT_NAME.search((dotted(arg) or "").rsplit(".", 1)[-1]) else None, None) is True

    def _used_as(self, expr: cst.CSTNode, methods: frozenset[str]) -> bool:
        """The file calls one of ``methods`` on the value ``expr`` holds (see :meth:`used_as_module`)."""
        text = dotted(expr)
        if text is None or not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        if self._module_uses is None:  # once per file: (scope, receiver, method) of every method call
            uses: set[tuple[int, str, str]] = set()
            for call in self.model.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute):
                    receiver = dotted(func.value)
                    if receiver is not None:
                        uses.add((id(self._use_scope(func.value, receiver)), receiver, func.attr.value))
            self._module_uses = uses
        scope = id(self._use_scope(expr, text))
        return any((scope, text, m) in self._module_uses for m in methods)

    def _use_scope(self, expr: cst.CSTNode, text: str) -> cst.CSTNode | None:
        """Where a spelling means one value: ``self.x`` within its class, a name within its function."""
        if text.startswith("self."):
            found = self.enclosing_method(expr)
            if found is not None:
                return found[1]
        return self.model.enclosing_function(expr)

    def _from_module_container(self, expr: cst.CSTNode) -> bool:
        """``layer`` in ``for layer in self.layers`` (an ``nn.ModuleList``), ``for m in
        self.children()``, ``for i, layer in enumerate(self.layers)``, ``for name, m in
        self.blocks.items()`` (an ``nn.ModuleDict``), ``layer = self.layers[i]``."""
        if not isinstance(expr, cst.Name):
            return False
        bindings = self.model.bindings_of(expr)
        if not bindings or len(bindings) != 1:
            return False
        if bindings[0].kind == ASSIGN and isinstance(bindings[0].value, cst.Subscript):
            return self.is_module_container(bindings[0].value.value)
        if bindings[0].kind != FOR:
            return False
        iterable = bindings[0].value
        target = getattr(bindings[0].node, "target", None)
        pair = False
        if isinstance(target, (cst.Tuple, cst.List)):
            last = target.elements[-1].value if target.elements else None
            if len(target.elements) != 2 or not (isinstance(last, cst.Name) and last.value == expr.value):
                return False
            if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) \
                    and iterable.func.value == "enumerate" and iterable.args:
                iterable = iterable.args[0].value
            else:
                pair = True
        elif not isinstance(target, cst.Name):
            return False
        method = call_method(iterable)
        if method in (("named_children", "named_modules") if pair else ("children", "modules")):
            return True
        if method == ("items" if pair else "values"):
            return self.is_module_container(iterable.func.value)
        return not pair and self.is_module_container(iterable)

    def is_module_container(self, expr: cst.CSTNode) -> bool:
        """``expr`` holds an ``nn.ModuleList``/``nn.ModuleDict``/``nn.Sequential``."""
        bindings = self.model.bindings_of(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if not bindings:
            return False
        for b in bindings:
            if b.kind not in (ASSIGN, WITH) or not isinstance(b.value, cst.Call):
                return False
            q = self.model.qualified_name(b.value.func)
            if q not in ("torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Sequential"):
                return False
        return True

    def is_registering_call(self, call: cst.Call) -> bool:
        """A call that registers its arguments: ``nn.ModuleList(...)``, a module class."""
        q = self.model.qualified_name(call.func)
        if q is not None:
            return q in _REGISTERING or is_torch_module_class_name(q)
        return kind_of(self.model, call) == MODULE

    # ------------------------------------------------------------ self calls
    def self_calls(self, classdef: cst.ClassDef) -> list[cst.Call]:
        """Calls ``<self>.register_buffer/register_parameter/add_module/register_module(...)``
        and ``setattr(...)`` made in the methods of ``classdef``."""
        if self._scope_calls is None:
            found: dict[int, list[cst.Call]] = {}
            for call in self.model.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute):
                    if func.attr.value not in _SELF_REGISTERING_METHODS:
                        continue
                elif not (isinstance(func, cst.Name) and func.value == "setattr"):
                    continue
                method = self.enclosing_method(call)
                if method is not None:
                    found.setdefault(id(method[1]), []).append(call)
            self._scope_calls = found
        return self._scope_calls.get(id(classdef), [])

    def registered_names(self, classdef: cst.ClassDef, _depth: int = 0, own: bool = False) -> set[str] | None:
        """Attribute names the class, or a base class, registers by string
        (``register_buffer("mask", ...)``); None when that cannot be known: a name is
        computed, or a base other than ``nn.Module`` is defined elsewhere (its
        buffers and parameters are unknown; ``self.running_mean = ...`` in a
        ``BatchNorm`` subclass updates a registered buffer). ``own``: the class's own
        registrations only, its bases left out."""
        names: set[str] = set()
        for arg in () if own else classdef.bases:
            base = arg.value
            q = self.model.qualified_name(base)
            if q in _REGISTERS_NOTHING or (q is not None and not q.startswith("torch.nn.")
                                          and self._base_verdict(base, 0) is False):
                continue
            bindings = self.model.bindings_of(base) if isinstance(base, cst.Name) else None
            if q is None and bindings and len(bindings) == 1 and bindings[0].kind == CLASS and _depth < 8:
                inherited = self.registered_names(bindings[0].value, _depth + 1)
                if inherited is None:
                    return None
                names |= inherited
                continue
            project = getattr(self.model, "project_facts", None)  # a class of another file of the project
            inherited = project.registered_names(self.model, base) if project is not None else None
            if inherited is None:
                return None
            names |= inherited
        for call in self.self_calls(classdef):
            if not call.args:
                continue
            first = call.args[0].value
            if isinstance(call.func, cst.Name):  # setattr(self, name, value)
                if len(call.args) < 2:
                    continue
                first = call.args[1].value
            if isinstance(first, cst.SimpleString):
                value = first.evaluated_value
                if isinstance(value, str):
                    names.add(value)
                    continue
            return None
        return names

    def attr_bindings(self, classdef: cst.ClassDef, attr: str) -> list:
        """Every ``self.<attr> = ...`` made in the methods of ``classdef``."""
        scope = self.model.scope_for_node.get(id(classdef))
        if scope is None:
            return []
        return scope.attrs.get(f"self.{attr}", [])


def _combine(verdicts: list[bool | None]) -> bool | None:
    if any(v is True for v in verdicts):
        return True
    return None if any(v is None for v in verdicts) else False


def defines(classdef: cst.ClassDef, name: str) -> bool:
    body = classdef.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    return any(isinstance(s, cst.FunctionDef) and s.name.value == name for s in body.body)


def self_attribute(target: cst.CSTNode, method: cst.FunctionDef) -> str | None:
    """``x`` for a target ``self.x`` where ``self`` is the method's first parameter."""
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
        return None
    params = method.params.params
    if not params or target.value.value != params[0].name.value:
        return None
    return target.attr.value


def mentions_name(expr: cst.CSTNode, name: str) -> bool:
    """``expr`` contains a Name or an attribute called ``name`` (small subtrees only)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value == name:
            return True
        if isinstance(node, cst.Attribute) and node.attr.value == name:
            return True
        stack.extend(node.children)
    return False


def _named_not_a_module(value: cst.CSTNode) -> bool:
    """``value`` is a name or attribute spelled as something about a model (``batch.model_output``):
    a kind guessed from that spelling is no evidence of a module."""
    return isinstance(value, (cst.Name, cst.Attribute)) and bool(
        NOT_AN_OBJECT_NAME.search((dotted(value) or "").rsplit(".", 1)[-1]))


def _not_a_module(value: cst.CSTNode | None) -> bool:
    """Assigned values that are never module instances: containers, strings, state dicts."""
    if isinstance(value, (cst.Dict, cst.DictComp, cst.List, cst.ListComp, cst.Tuple,
                          cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(value, cst.Call):
        method = call_method(value)
        if method is not None and "state_dict" in method:
            return True
        leaf = (dotted(value.func) or "").rsplit(".", 1)[-1]
        if leaf in ("OrderedDict", "dict"):
            return True
        if leaf in ("deepcopy", "copy") and value.args:
            return _not_a_module(value.args[0].value)
    return False


def facts(model: "FileModel") -> ModuleFacts:
    """The file's shared :class:`ModuleFacts` (built once, used by every rule that asks)."""
    return model.fact(ModuleFacts)
