"""Passes that compute an input of the training (analysis/preparation.py ``feeds_training``), and
what TRN602 makes of them: such a pass over data runs in the training's own mode, so a model this
file trains and never switches to eval mode is no certain finding there."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules import registry
from lint_rules.analysis.model import FileModel
from lint_rules.analysis.preparation import Preparation
from lint_rules.engine import lint_source


def _feeds(source: str) -> dict[str, bool]:
    """``feeds_training`` of every function of ``source``, by name."""
    model = FileModel(cst.parse_module(textwrap.dedent(source)))
    facts = model.fact(Preparation)
    return {fn.name.value: facts.feeds_training(fn) for fn in model.nodes(cst.FunctionDef)}


def _findings(source: str) -> list[tuple[int, str]]:
    """(line, confidence) of TRN602's findings with --preview."""
    every = registry.default_codes(preview=True)
    result = lint_source(textwrap.dedent(source), "t.py", every, possible=every)
    return [(f.line, f.confidence) for f in result.findings if f.code == "TRN602"]


# A memory bank filled by a no-grad pass over the training data, then handed to the epoch function.
BANK = """
import torch

def fill_bank(train_loader, net):
    bank = []
    with torch.no_grad():
        for idx, crops in train_loader:
            bank.append(net(crops[0]))
    return torch.stack(bank)

def one_epoch(train_loader, net, opt, bank):
    net.train()
    for idx, crops in train_loader:
        loss = (net(crops[0]) - bank[idx]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return bank

def main(train_loader, net, opt):
    bank = fill_bank(train_loader, net)
    for epoch in range(10):
        bank = one_epoch(train_loader, net, opt, bank)
"""

# The same pass scored for a report: its result is printed, or given to a function that trains nothing.
REPORTED = BANK.replace("""    bank = fill_bank(train_loader, net)
    for epoch in range(10):
        bank = one_epoch(train_loader, net, opt, bank)
""", """    for epoch in range(10):
        one_epoch(train_loader, net, opt, None)
        score = fill_bank(train_loader, net)
        log_scores(score)

def log_scores(score):
    print(score.mean())
""")


def test_a_pass_whose_result_a_training_function_takes_feeds_training() -> None:
    assert _feeds(BANK) == {"fill_bank": True, "one_epoch": False, "main": False}


def test_a_result_printed_or_given_to_a_function_that_trains_nothing_feeds_nothing() -> None:
    assert _feeds(REPORTED)["fill_bank"] is False


def test_a_method_unpacked_into_several_names_feeds_training() -> None:
    source = """
    class Clusterer:
        def centroids(self, loader):
            out = []
            for x, _ in loader:
                out.append(self.encoder(x))
            return out, len(out)

        def fit_epoch(self, loader, cents):
            for x, _ in loader:
                self.opt.zero_grad()
                self.loss(self.encoder(x), cents).backward()
                self.opt.step()

        def run(self, loader):
            cents, count = self.centroids(loader)
            self.fit_epoch(loader, cents)
    """
    assert _feeds(source)["centroids"] is True


def test_every_call_must_feed_training() -> None:
    # a second caller uses the result for a report: the function is not only a preparation
    source = BANK + """
def report(train_loader, net):
    print(fill_bank(train_loader, net).norm())
"""
    assert _feeds(source)["fill_bank"] is False


def test_a_training_call_before_the_pass_is_not_fed_by_it() -> None:
    source = BANK.replace("""    bank = fill_bank(train_loader, net)
    for epoch in range(10):
        bank = one_epoch(train_loader, net, opt, bank)
""", """    bank = None
    one_epoch(train_loader, net, opt, bank)
    bank = fill_bank(train_loader, net)
""")
    assert _feeds(source)["fill_bank"] is False


def test_trn602_keeps_a_preparation_pass_in_the_preview_tier() -> None:
    # net.train() in the epoch function and no eval() anywhere: certain for a pass scored for a report,
    # possible for one whose result the training takes
    assert _findings(BANK) == [(7, "possible")]
    assert _findings(REPORTED) == [(7, "certain")]
