"""Which loaders a distributed sampler feeds, where set_epoch() may reach it, and which uses of a
loader run every epoch (analysis/loaders.py), asked of the facts directly."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.loaders import NEEDS, LoaderFacts
from lint_rules.analysis.model import FileModel


def _facts(src: str) -> tuple[FileModel, LoaderFacts]:
    model = FileModel(cst.parse_module(textwrap.dedent(src)), frozenset(NEEDS))
    return model, model.fact(LoaderFacts)


def _paths(facts: LoaderFacts) -> list[list[str | None]]:
    return [[facts.path(v) for v in feed.loaders] for feed in facts.feeds]


def test_the_fact_is_built_once_per_file() -> None:
    model, facts = _facts("from torch.utils.data import DistributedSampler\ns = DistributedSampler(ds)\n")
    assert model.fact(LoaderFacts) is facts


def test_a_sampler_feeds_the_loader_it_is_passed_to_by_keyword_or_position() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
        other = DataLoader(ds, 32, False, sampler)
        unrelated = DataLoader(ds, shuffle=True)
    """)
    assert len(facts.feeds) == 1
    assert facts.path(facts.feeds[0].variable) == "sampler"
    assert _paths(facts) == [["loader", "other"]]


def test_a_sampler_that_does_not_shuffle_is_not_a_fact() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        a = DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False))
        b = DataLoader(ds, sampler=DistributedSampler(ds, 2, 0, False))
    """)
    assert facts.feeds == []


def test_the_same_name_in_another_function_is_another_sampler() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        def build(ds):
            sampler = DistributedSampler(ds)
            return 1
        def other(ds, sampler):
            loader = DataLoader(ds, sampler=sampler)
    """)
    assert _paths(facts) == [[]]


def test_what_a_wrapper_returns_for_the_loader_is_fed_by_the_same_sampler() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, sampler=sampler)
        model, opt, train_dl = accelerator.prepare(model, opt, loader)
        (eng, o, distr_dl, sched) = backend.distribute(model=net, training_data=ds if fast else train_dl)
        stats = evaluate(loader)
    """)
    # lined-up arguments pick `train_dl`; keyword arguments fall back to the loader-like name
    assert _paths(facts) == [["loader", "train_dl", "distr_dl"]]


def test_dict_literals_are_followed_by_key_into_a_class_that_keeps_them() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        class Trainer:
            def __init__(self, loaders):
                self.loaders = loaders
        samplers = {"train": DistributedSampler(train_ds)}
        loaders = {"train": DataLoader(train_ds, sampler=samplers["train"]), "val": DataLoader(val_ds)}
        Trainer(loaders)
    """)
    assert facts.path(facts.feeds[0].variable) == "samplers['train']"
    assert _paths(facts) == [["loaders['train']", "self.loaders['train']"]]


def test_set_epoch_on_the_sampler_its_loader_or_a_helper_parameter_counts() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        def start_epoch(s, epoch):
            s.set_epoch(epoch)
        def train(ds):
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
            start_epoch(sampler, 0)
        def via_loader(ds):
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
            loader.sampler.set_epoch(0)
        def unset(ds):
            sampler = DistributedSampler(ds)
            loader = DataLoader(ds, sampler=sampler)
        def elsewhere(sampler):
            sampler.set_epoch(1)
        other_sampler = object()
        elsewhere(other_sampler)
    """)
    assert [facts.epoch_set(f) for f in facts.feeds] == [True, True, False]


def test_per_epoch_uses_skip_single_passes_and_evaluation() -> None:
    model, facts = _facts("""
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        def once(ds):
            loader = DataLoader(ds, sampler=DistributedSampler(ds))
            for x in loader:
                step(x)
        def evaluated(ds):
            loader = DataLoader(ds, sampler=DistributedSampler(ds))
            for epoch in range(3):
                with torch.no_grad():
                    for x in loader:
                        score(x)
                stats = evaluate(loader)
        def trained(ds):
            loader = DataLoader(ds, sampler=DistributedSampler(ds))
            for epoch in range(3):
                for x in enumerate(loader):
                    step(x)
        def helper_per_epoch(ds):
            loader = DataLoader(ds, sampler=DistributedSampler(ds))
            for epoch in range(3):
                train_one_epoch(model, loader)
    """)
    uses = [facts.per_epoch_use(f.loaders[0]) for f in facts.feeds]
    assert uses[:2] == [None, None]
    assert all(isinstance(u, cst.Name) and u.value == "loader" for u in uses[2:])
    # the use found is the one inside the epoch loop, not the assignment
    assert [len(model.enclosing_loops(u)) for u in uses[2:]] == [2, 1]


def test_a_method_a_loop_calls_runs_per_epoch() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        class Trainer:
            def __init__(self, data_loader):
                self.data_loader = data_loader
            def run(self):
                while True:
                    self._epoch()
            def _epoch(self):
                for batch in self.data_loader["train"]:
                    step(batch)
        def main(ds):
            loaders = {"train": DataLoader(ds, sampler=DistributedSampler(ds))}
            Trainer(loaders).run()
    """)
    feed, = facts.feeds
    assert [facts.path(v) for v in feed.loaders] == ["loaders['train']", "self.data_loader['train']"]
    assert facts.per_epoch_use(feed.loaders[0]) is None  # main() iterates nothing itself
    assert facts.per_epoch_use(feed.loaders[1]) is not None


def test_fed_by_names_the_sampler_behind_a_loops_iterable() -> None:
    model, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        train_sampler = DistributedSampler(train_ds)
        train = DataLoader(train_ds, sampler=train_sampler)
        val = DataLoader(val_ds, sampler=DistributedSampler(val_ds))
        plain = DataLoader(ds, shuffle=True)
        for epoch in range(3):
            for i, b in enumerate(train):
                pass
            for b in val:
                pass
            for b in plain:
                pass
    """)
    loops = [n for n in model.nodes(cst.For) if model.enclosing_loops(n)]
    fed = [[facts.path(f.variable) if f.variable is not None else model.module.code_for_node(f.sampler)
            for f in facts.fed_by(loop)] for loop in loops]
    assert fed == [["train_sampler"], ["DistributedSampler(val_ds)"], []]


def test_a_local_helper_named_for_evaluation_that_trains_nothing_only_evaluates() -> None:
    # validate() turns grad off inside its loop, not around it; its name and its body (no backward, no
    # step) say it only measures. A local helper named like an evaluation that steps still trains.
    _, facts = _facts("""
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        def validate(loader, model):
            model.eval()
            for x, y in loader:
                with torch.no_grad():
                    out = model(x)
        def test_and_tune(loader, model, opt):
            for x, y in loader:
                model(x).sum().backward()
                opt.step()
        def main(ds, model, opt):
            scored = DataLoader(ds, sampler=DistributedSampler(ds))
            tuned = DataLoader(ds, sampler=DistributedSampler(ds))
            for epoch in range(3):
                validate(scored, model)
                test_and_tune(tuned, model, opt)
    """)
    uses = {facts.path(f.loaders[0]): facts.per_epoch_use(f.loaders[0]) for f in facts.feeds}
    assert uses["scored"] is None
    assert uses["tuned"] is not None


def test_a_sampler_or_loader_spelled_as_held_out_data_is_held_out() -> None:
    _, facts = _facts("""
        from torch.utils.data import DataLoader, DistributedSampler
        val_sampler = DistributedSampler(val_set)
        loader_a = DataLoader(val_set, sampler=val_sampler)
        sampler = DistributedSampler(ds)
        test_loader = DataLoader(ds, sampler=sampler)
        train_sampler = DistributedSampler(train_set)
        train_loader = DataLoader(train_set, sampler=train_sampler)
    """)
    assert [facts.held_out(f) for f in facts.feeds] == [True, True, False]
