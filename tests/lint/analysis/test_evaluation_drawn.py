"""Batches drawn with next(...) from a loader, held-out spellings, and models known only
because an optimizer is built from their parameters (analysis/evaluation.py)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import torch
from torch.autograd import Variable
from elsewhere import Classifier

classifier = Classifier()
optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1)
val_iter = iter(val_loader)
for i, data in enumerate(train_loader):
    points, target = data
    points = points.cuda()
    use(points)
    j, data = next(enumerate(testdataloader, 0))
    points, target = data
    points, target = Variable(points), target[:, 0]
    points = points.transpose(2, 1).cuda()
    use(points)
    use(target)
    vx, vy = next(val_iter)
    use(vx)
    batch = next(iter(range(3)))
    use(batch)
    use(classifier(points))
"""


def _uses(model: FileModel) -> list[cst.CSTNode]:
    return [c.args[0].value for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "use"]


def test_drawn_from_follows_the_latest_assignment_unpacking_and_calls() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    facts = model.fact(FileFacts)
    drawn = [facts.drawn_from(u) for u in _uses(model)]
    spelled = [model.module.code_for_node(d) if d is not None else None for d in drawn]
    # the training batch (bound by the for) is not drawn; a range is not data
    assert spelled == [None, "testdataloader", "testdataloader", "val_loader", None, None]


@pytest.mark.parametrize(("data", "held_out"), [
    ("testdataloader", True), ("val_loader", True), ("self.valid_dl", True), ("loaders['dev']", True),
    ("eval_iter", True), ("train_loader", False), ("unlabelled_loader", False), ("loaders['train']", False),
    ("self.val_dataloader()", True), ("interval_loader", False),
])
def test_held_out_spellings(data: str, held_out: bool) -> None:
    model = FileModel(cst.parse_module(f"x = {data}\n"))
    value = model.nodes(cst.Assign)[0].value
    assert model.fact(FileFacts).held_out(value) is held_out


def test_a_value_an_optimizer_is_built_from_is_a_model() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    facts = model.fact(FileFacts)
    net_call = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "classifier"]
    assert net_call and facts.is_model_call(net_call[0])


def test_a_name_in_another_function_is_not_the_optimized_model() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch
        def build(clf):
            return torch.optim.Adam(clf.parameters())
        def score(clf, x):
            return clf(x)
        def other(x):
            encoder = make()
            return encoder(x)
        """)))
    facts = model.fact(FileFacts)
    calls = {c.func.value: c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name)}
    assert not facts.is_model_call(calls["clf"])  # another function's parameter
    assert not facts.is_model_call(calls["encoder"])


def test_an_item_of_a_module_container_is_a_model_and_a_loader_dict_item_is_data() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch
        class Trainer:
            def __init__(self, model, data_loader):
                self.model = model
                self.data_loader = data_loader
                self.stats = {}
            def _eval_epoch(self):
                for batch in self.data_loader["dev"]:
                    self.model["generator"](batch)
                    self.stats["loss"](batch)
        """)))
    facts = model.fact(FileFacts)
    calls = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Subscript)]
    assert [facts.is_model_call(c) for c in calls] == [True, False]  # self.stats is no module
    loop = model.nodes(cst.For)[0]
    assert facts.iterates_data(loop.iter)
    assert facts.evaluation_calls(loop) == [calls[0]]


def test_an_iterator_made_by_another_call_is_judged_by_its_own_spelling() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
    batches_valid = task_valid.episodes()
    feed = task_train.episodes()
    xv, yv = next(batches_valid)
    xt, yt = next(feed)
    use(xv)
    use(xt)
    """)))
    facts = model.fact(FileFacts)
    held, other = [c.args[0].value for c in model.nodes(cst.Call) if cst.Module([]).code_for_node(c.func) == "use"]
    assert cst.Module([]).code_for_node(facts.drawn_from(held)) == "batches_valid"
    assert facts.drawn_from(other) is None  # `feed` is spelled like no data
