"""Provenance through tuples and loss helpers: ``validity, label = disc(img)`` takes element 1 of
what the discriminator's ``forward`` returns, and ``self.auxiliary_loss(label, y)`` is a loss call
when the helper hands that parameter, unchanged, to the loss it returns."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.model import FileModel
from lint_rules.analysis.provenance import LOGITS, SIGMOID, SOFTMAX, LossSinks, Provenance

CE = (frozenset({"torch.nn.functional.cross_entropy"}), frozenset({"torch.nn.CrossEntropyLoss"}))

DISCRIMINATOR = """
import torch.nn as nn
import torch.nn.functional as F

class Disc(nn.Module):
    def __init__(self):
        super().__init__()
        self.adv = nn.Sequential(nn.Linear(8, 1), nn.Sigmoid())
        self.aux = nn.Sequential(nn.Linear(8, 4), nn.Softmax(dim=1))
        self.fc = nn.Linear(8, 4)

    def forward(self, h):
        if h is None:
            return self.adv(h), self.aux(h), self.fc(h)
        return self.adv(h), F.softmax(self.fc(h), dim=1), self.fc(h)

class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.aux = nn.Sequential(nn.Linear(8, 4), nn.Softmax(dim=1))

    def forward(self, h):
        if h is None:
            return self.aux(h)
        return self.aux(h), h
"""


def _model(src: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(src)))


def _name_use(model: FileModel, name: str) -> cst.Name:
    """The last Name ``name`` read in a ``use(...)`` call."""
    calls = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "use"]
    return [a.value for c in calls for a in c.args if isinstance(a.value, cst.Name) and a.value.value == name][-1]


def test_an_unpacked_name_is_bound_to_its_element_of_the_value():
    model = _model("""
        a, b = f(x)
        c, d = 1, g(x)
        e, *rest, z = f(x)
        (p, q), r = f(x)
        use(a, b, c, d, e, rest, z, p, r)
        """)
    element = {name: [(b.element[1] if b.element else None) for b in model.bindings_of(_name_use(model, name))]
               for name in "a b c d e rest z p r".split()}
    assert element == {"a": [0], "b": [1], "c": [None], "d": [None], "e": [0], "rest": [None], "z": [None],
                       "p": [None], "r": [1]}
    (b,) = model.bindings_of(_name_use(model, "b"))
    assert isinstance(b.element[0], cst.Call) and b.value is None  # the whole value, kept apart from `value`


def test_an_element_of_a_module_call_is_what_every_return_puts_there():
    model = _model(DISCRIMINATOR + """
disc = Disc()
validity, probs, logits = disc(h)
one, two = Mixed()(h)
use(validity, probs, logits, one, two)
""")
    prov = Provenance(model)
    got = {n: prov.of_value(_name_use(model, n), _name_use(model, n)) for n in ("validity", "probs", "logits",
                                                                              "one", "two")}
    # both returns agree on each element; Mixed returns a tuple on one path only
    assert got == {"validity": SIGMOID, "probs": SOFTMAX, "logits": LOGITS, "one": None, "two": None}


def test_an_element_follows_the_module_through_self_attributes_and_wrappers():
    model = _model(DISCRIMINATOR + """
class Trainer:
    def __init__(self):
        self.disc = nn.DataParallel(Disc().to("cuda"))

    def step(self, h):
        validity, probs, logits = self.disc(h)
        use(validity, probs)
""")
    prov = Provenance(model)
    assert prov.of_value(_name_use(model, "probs"), _name_use(model, "probs")) == SOFTMAX
    assert prov.of_value(_name_use(model, "validity"), _name_use(model, "validity")) == SIGMOID


def _sink_inputs(src: str) -> dict[str, str | None]:
    """For each call of a function named ``call_*``: the text of what it gives the loss, or None."""
    model = _model(src)
    sinks = LossSinks(model, *CE)
    out = {}
    for call in model.nodes(cst.Call):
        func = call.func
        leaf = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) \
            else None
        if leaf and leaf.startswith("call_"):
            value = sinks.input_of(call)
            out[leaf] = cst.Module([]).code_for_node(value) if value is not None else None
    return out


def test_a_loss_helper_call_gives_the_argument_of_the_parameter_the_helper_hands_to_the_loss():
    got = _sink_inputs("""
        import torch.nn.functional as F

        def call_function(y, y_hat):
            return F.cross_entropy(y_hat, y)

        def call_changed(y_hat, y):
            y_hat = y_hat / 2
            return F.cross_entropy(y_hat, y)

        def call_branches(y_hat, y, z):
            if y is None:
                return F.cross_entropy(z, y)
            return F.cross_entropy(y_hat, y)

        def call_not_a_loss(y_hat, y):
            return F.mse_loss(y_hat, y)

        def call_keyword(y_hat, y):
            return F.cross_entropy(input=y_hat, target=y)

        class T:
            def call_method(self, y_hat, y):
                return F.cross_entropy(y_hat, y)

            @staticmethod
            def call_static(y_hat, y):
                return F.cross_entropy(y_hat, y)

            def run(self, probs, labels):
                self.call_method(probs, labels)
                self.call_static(probs, labels)
                call_function(labels, probs)
                call_changed(probs, labels)
                call_branches(probs, labels, probs)
                call_not_a_loss(probs, labels)
                call_keyword(y=labels, y_hat=probs)
        """)
    assert got == {"call_method": "probs", "call_static": None, "call_function": "probs", "call_changed": None,
                   "call_branches": None, "call_not_a_loss": None, "call_keyword": "probs"}
