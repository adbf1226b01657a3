"""What a value computes reaches a forward (analysis/evaluation.py ``FileFacts.feeds_model``): the
test behind TRN601's ``volatile=True`` finding, which matters only where a model runs on the value."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import torch
from torch.autograd import Variable

class Detector(nn.Module):
    def __init__(self, boxes):
        super().__init__()
        self.anchors = Variable(boxes.forward(), volatile=True)          # stored: a constant

def predict(net, image, labels, criterion):
    pixels = Variable(image, volatile=True)                             # read by net(...) below
    labels = [Variable(t, volatile=True) for t in labels]               # only the loss reads them
    direct = net(Variable(image, volatile=True))                        # an argument of the forward
    helper = encode_all(Variable(image, volatile=True))                 # a project function may run it
    summed = torch.sum(Variable(image, volatile=True))                  # a torch function runs no model
    out = net(pixels)
    return criterion(out, labels)
"""


def test_feeds_model() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    facts = model.fact(FileFacts)
    variables = [c for c in model.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "Variable"]
    assert [facts.feeds_model(v) for v in variables] == [False, True, False, True, True, False]
