"""Confidence per finding: a plain lint reports certain findings, --preview (or the rule's own code)
adds the possible ones; each rule of registry.CERTAIN_CORE has a certain case and a possible one."""

from __future__ import annotations

import textwrap

import pytest

from lint_rules import registry
from lint_rules.engine import lint_source

# code -> (source, line of the certain finding, line of the possible finding), or a rule whose
# confidence is the file's: ((certain source, line), (possible source, line))
CASES = {
    "TRN106": ("""
        import torch
        def train(model, loader, opt, crit):
            total = 0.0
            for x, y in loader:
                opt.zero_grad()
                loss = crit(model(x), y)
                loss.backward()
                opt.step()
                total += loss                 # certain: never reset, every graph kept
            window = 0.0
            for i, (x, y) in enumerate(loader):
                opt.zero_grad()
                loss = crit(model(x), y)
                loss.backward()
                opt.step()
                window += loss                # possible: reset every 100 steps
                if i % 100 == 0:
                    window = 0.0
        """, 10, 17),
    "TRN108": ("""
        import torch
        def fit(net, batches, loss_of, lr, world):
            for inputs, labels in batches:
                loss_of(net(inputs), labels).backward()
                for w in net.parameters():
                    w.data.sub_(lr * w.grad.data)               # certain: a hand-written SGD step
                    w.grad.data.copy_(world.average(w.grad))    # possible: a gradient copied back
        """, 7, 8),
    "TRN503": ("""
        import torch
        import torch.nn.functional as F
        def loss_and_entropy(logits, y):
            probs = F.softmax(logits, dim=-1)
            loss = F.nll_loss(torch.log(probs), y)            # certain: log-probabilities into NLL
            entropy = -(probs * probs.log()).sum(-1)          # possible: an entropy term
            return loss, entropy
        """, 6, 7),
    "TRN602": ("""
        import torch
        from torch.utils.data import DataLoader
        def fit(encoder, head, loader, opt):
            encoder.train()
            head.train()
        @torch.no_grad()
        def score(encoder, head, pairs, size):
            encoder.eval()
            z = encoder(pairs)
            for idx in DataLoader(range(len(pairs)), size):   # certain: head forgotten
                head(z[idx])
        @torch.no_grad()
        def evaluate(model, val_loader):
            for x in val_loader:                              # possible: a caller may set the mode
                model(x)
        """, 11, 15),
    "TRN701": ("""
        import torch
        theirs = torch.load(args.pretrained_weights)          # certain: a published checkpoint
        own = torch.load(os.path.join(out_dir, "last.pt"))    # possible: the script's own
        """, 3, 4),
    "TRN201": ("""
        import torch
        for x, y in loader:
            opt.zero_grad()
            out = model(x)
            loss = crit(out, y)
            loss.backward()
            opt.step()
            total += loss.item()              # possible: a per-step running total, often deliberate
            for row in out:
                hits += row.argmax().item()   # certain: one sync per element, every step
        """, 11, 9),
    "TRN402": ("""
        import torch
        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.temperature = torch.ones(1, requires_grad=True)   # certain: never trained
                self.mask = torch.zeros(4)                             # possible: may stay on one device
        """, 6, 7),
    "TRN502": ("""
        import torch
        crit = torch.nn.BCELoss()
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = crit(torch.sigmoid(model(x)), y)        # certain: raises under autocast
            plain = crit(torch.sigmoid(model(x)), y)           # possible: works, only less stable
        """, 6, 7),
    "TRN301": (("""
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        loader = DataLoader(data, sampler=DistributedSampler(data))
        model = torch.nn.DataParallel(build())               # certain: shards per process, no DDP
        for epoch in range(10):
            loader.sampler.set_epoch(epoch)
            for x, y in loader:
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
        """, 5), ("""
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(data, shuffle=True)
        model = torch.nn.DataParallel(build())               # possible: one process; slow, but it works
        for epoch in range(10):
            for x, y in loader:
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
        """, 5)),
}


def test_every_certain_core_rule_has_a_case() -> None:
    assert set(CASES) == set(registry.CERTAIN_CORE)


def _findings(source: str, code: str, codes=None, possible=None) -> list[tuple[int, str]]:
    return [(f.line, f.confidence) for f in lint_source(textwrap.dedent(source), "t.py", codes, possible=possible).findings
            if f.code == code]


@pytest.mark.parametrize("code", sorted(c for c in CASES if len(CASES[c]) == 2))
def test_a_file_level_confidence(code: str) -> None:
    (certain_source, certain), (possible_source, possible) = CASES[code]
    every = registry.default_codes(preview=True)
    assert _findings(certain_source, code) == [(certain, "certain")]
    assert _findings(possible_source, code) == []
    assert _findings(possible_source, code, every, every) == [(possible, "possible")]


@pytest.mark.parametrize("code", sorted(c for c in CASES if len(CASES[c]) == 3))
def test_a_plain_lint_reports_the_certain_finding_only(code: str) -> None:
    source, certain, possible = CASES[code]
    source = textwrap.dedent(source)
    plain = [(f.line, f.confidence) for f in lint_source(source, "t.py").findings if f.code == code]
    assert plain == [(certain, "certain")]
    every = [(f.line, f.confidence) for f in lint_source(source, "t.py", registry.default_codes(preview=True),
                                                           possible=registry.default_codes(preview=True)).findings
             if f.code == code]
    assert every == sorted([(certain, "certain"), (possible, "possible")])
    # selected by its code: everything, as Ruff runs a preview rule selected by code
    chosen = [f.line for f in lint_source(source, "t.py", {code}).findings]
    assert chosen == sorted([certain, possible])


def test_a_default_rule_finding_is_certain() -> None:
    source = "import torch\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"
    findings = lint_source(source, "t.py").findings
    assert [(f.code, f.confidence) for f in findings] == [("TRN101", "certain")]


# Shapes that the evidence leaves possible (reported with --preview only), each of a rule that also
# has certain findings.
POSSIBLE_SHAPES = {
    "a model built afresh and wrapped in DataParallel on each iteration": ("TRN301", """
        import torch
        for level in levels:
            net = make_net(level)
            net.load_state_dict(torch.load(weights[level], weights_only=True))
            net = torch.nn.DataParallel(net)          # a new model each time, not a wrapper's wrapper
            with torch.no_grad():
                outputs = [net(x) for x in inputs]
        """),
    "DataParallel applied once by a training script": ("TRN301", """
        import torch
        model = torch.nn.DataParallel(build())        # works; DDP needs a new launcher
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        """),
    "conditional DataParallel": ("TRN301", """
        import torch
        if torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)      # the authors' multi-GPU fallback
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        """),
    "a sync per named metric, every step": ("TRN201", """
        import torch
        for x, y in loader:
            opt.zero_grad()
            parts = crit(model(x), y)
            sum(parts.values()).backward()
            opt.step()
            for name, part in parts.items():
                history[name].append(part.item())     # a handful of named values for the log
        """),
    "a print of the loss every step": ("TRN201", """
        import torch
        for x, y in loader:
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
            print("loss", loss)                       # a per-step log, often the tutorial's point
        """),
    "a per-element sync in a test": ("TRN201", """
        import torch
        def test_rows_stay_finite(model, batches, opt):
            for x, y in batches:
                opt.zero_grad()
                out = model(x)
                crit(out, y).backward()
                opt.step()
                for row in out:
                    assert row.sum().item() < 1e6      # read on purpose, to assert on it
        """),
    "explicit weights_only=False on the script's own file": ("TRN701", """
        import torch
        state = torch.load(os.path.join(out_dir, "last.pt"), weights_only=False)
        """),
    "a sum of chunk losses with no optimizer step": ("TRN106", """
        import torch
        from torch.utils.data import DataLoader
        def chunked_loss(model, ds):
            total = 0.0
            for x, y in DataLoader(ds, batch_size=4):
                total += torch.nn.functional.cross_entropy(model(x), y)
            return total
        """),
    "a scheduler stepped before an out-of-sight call handed the optimizer": ("TRN801", """
        import torch
        from trainer_lib import run_epoch
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 5)
        for epoch in range(10):
            sched.step()
            run_epoch(net, batches, opt)        # steps opt, out of sight
        """),
    "a generation loop whose function sets no eval mode": ("TRN601", """
        import torch
        def decode(model, tokens, n):
            steps = []
            for _ in range(n):
                logits = model(tokens)               # the caller may train on the logits that come back
                steps.append(logits[:, -1])
                tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            return tokens, steps
        """),
    "an inference loop in a method of a module class a framework calls": ("TRN601", """
        import torch
        from torch import nn
        class Ranker(nn.Module):
            def rank_candidates(self, image, candidates):
                scores = []
                for k in range(len(candidates)):
                    scores.append(self(image, candidates[k]).item())
                return sorted(range(len(scores)), key=scores.__getitem__)
        """),
    "a one-off prediction that hands out a label": ("TRN601", """
        import torch
        def predict_sentiment(net, vocab, sentence):
            ids = torch.tensor(vocab[sentence.split()])
            return "positive" if torch.argmax(net(ids[None]), dim=1) == 1 else "negative"
        """),
}


def test_a_generation_loop_that_hands_back_only_token_ids_is_certain() -> None:
    # token ids chosen by argmax carry no gradient: no caller can train on what the loop hands back
    source = """
        import torch
        def decode(model, tokens, n):
            for _ in range(n):
                logits = model(tokens)
                tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            return tokens
        """
    assert [c for _, c in _findings(source, "TRN601")] == ["certain"]


@pytest.mark.parametrize("shape", sorted(POSSIBLE_SHAPES))
def test_possible_shapes_wait_for_preview(shape: str) -> None:
    code, source = POSSIBLE_SHAPES[shape]
    every = registry.default_codes(preview=True)
    assert _findings(source, code) == []
    assert [c for _, c in _findings(source, code, every, every)] == ["possible"]


# A running total cleared every N steps: rebinding it or detaching it in place frees the graphs kept
# so far (N graphs alive: possible); clearing it in place does not, since autograd records the in-place
# op on top of the history (every graph alive: certain).
TOTAL_LOOP = """
    import torch
    def fit(net, batches, optimiser, loss_of, log_every):
        {init}
        for step, (inputs, labels) in enumerate(batches):
            optimiser.zero_grad()
            loss = loss_of(net(inputs), labels)
            loss.backward()
            optimiser.step()
            running += loss
            if step % log_every == 0:
                print(running.item() / log_every)
                {reset}
    """


@pytest.mark.parametrize("init, reset, confidence", [
    ("running = torch.zeros(())", "running.zero_()", "certain"),
    ("running = torch.tensor(0.0)", "running.fill_(0)", "certain"),
    ("running = torch.zeros(())", "running.detach_()", "possible"),
    ("running = torch.zeros(())", "running = torch.zeros(())", "possible"),
])
def test_a_total_cleared_in_place_still_holds_every_graph(init: str, reset: str, confidence: str) -> None:
    source = TOTAL_LOOP.format(init=init, reset=reset)
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN106", every, every) == [(10, confidence)]
    assert _findings(source, "TRN106") == ([(10, "certain")] if confidence == "certain" else [])


def test_a_model_saved_into_an_in_memory_buffer_is_no_checkpoint() -> None:
    source = """
        import io
        import torch
        buffer = io.BytesIO()
        torch.save(torch.nn.Linear(2, 2), buffer)     # a deep copy through memory
        torch.save(torch.nn.Linear(2, 2), "model.pt")
        """
    every = registry.default_codes(preview=True)
    assert [line for line, _ in _findings(source, "TRN702", every, every)] == [6]


# Default-tier rules whose evidence still decides each finding: (source, certain line, possible line).
DEFAULT_RULE_CORES = {
    "TRN804": ("""
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        def wrap(rank, device):
            net = DDP(Net())
            net.to(device)                               # certain: the wrap saw it on the CPU
            placed = DDP(Net().cuda(rank), device_ids=[rank])
            placed.cuda(rank)                            # possible: likely already there
        """, 6, 8),
    "TRN103": ("""
        import copy
        import torch
        ema = copy.deepcopy(model)
        for p in model.parameters():
            p -= lr * p.grad                             # certain: autograd raises
        for p in ema.parameters():
            p.mul_(0.99)                                 # possible: a copy, frozen by its maker
        """, 6, 8),
    "TRN107": ("""
        import torch
        for x, y in loader:
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward(retain_graph=True)             # certain: a step follows, the graph lives on
            opt.step()
        def update(batch):
            opt.zero_grad()
            loss = crit(model(batch), batch)
            loss.backward(retain_graph=True)             # possible: freed when the helper returns
            opt.step()
        """, 6, 11),
    "TRN401": ("""
        import torch.nn as nn
        class Heads(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.heads = [nn.Linear(n, 1) for _ in range(2)]  # certain: never trained
        class Tower(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = []                                  # possible: wrong only under DataParallel
                for i in range(n):
                    block = nn.Linear(n, n)
                    self.add_module(f"block{i}", block)
                    self.blocks.append(block)
            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                return x
        """, 6, 10),
    "TRN604": ("""
        import torch.nn.functional as F
        from torch import nn
        class Net(nn.Module):
            def forward(self, x):
                return F.dropout(self.fc(x), p=0.5)      # certain: every forward, eval() too
            def training_step(self, x):
                return F.dropout(x, p=0.5)               # possible: may run in training only
        """, 6, 8),
}


@pytest.mark.parametrize("code", sorted(DEFAULT_RULE_CORES))
def test_a_default_rule_keeps_its_possible_findings_for_preview(code: str) -> None:
    assert code not in registry.PREVIEW_RULES
    source, certain, possible = DEFAULT_RULE_CORES[code]
    every = registry.default_codes(preview=True)
    assert _findings(source, code) == [(certain, "certain")]
    assert _findings(source, code, every, every) == [(certain, "certain"), (possible, "possible")]


@pytest.mark.parametrize("source", [
    """
    import torch.nn.functional as F
    from torch import nn
    class Prenet(nn.Module):
        \"\"\"Its dropout is always applied, also at inference (as in Tacotron 2).\"\"\"
        def forward(self, x):
            return F.dropout(self.fc(x), p=0.5)
    """,
    """
    import torch.nn.functional as F
    from torch import nn
    class ConcreteDropout(nn.Dropout):
        def forward(self, x):
            return F.dropout(x, self.p)
    """,
    """
    import torch.nn.functional as F
    from torch import nn
    class Block(nn.Module):
        def forward(self, x, dropout=0.0):
            return F.dropout(x, dropout)
    """,
], ids=["documented-always-on", "dropout-subclass", "caller-chosen-probability"])
def test_deliberate_dropout_in_forward_waits_for_preview(source: str) -> None:
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN604") == []
    assert [c for _, c in _findings(source, "TRN604", every, every)] == ["possible"]


IN_TESTS = {
    "TRN804": """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        def test_wrapper_follows_a_move(device):
            net = DDP(Net())
            net.to(device)
        """,
    "TRN103": """
        import torch
        def test_leaf_update_raises():
            w = torch.zeros(3, requires_grad=True)
            w.add_(1.0)
        """,
    "TRN107": """
        import torch
        class TestLoop:
            def test_retained_graph(self):
                for x, y in loader:
                    opt.zero_grad()
                    loss = crit(model(x), y)
                    loss.backward(retain_graph=True)
                    opt.step()
        """,
    "TRN604": """
        import torch.nn.functional as F
        from torch import nn
        def test_dropout_in_eval():
            class Net(nn.Module):
                def forward(self, x):
                    return F.dropout(x, p=0.5)
        """,
}


@pytest.mark.parametrize("code", sorted(IN_TESTS))
def test_a_test_of_the_pattern_is_only_possible(code: str) -> None:
    every = registry.default_codes(preview=True)
    assert _findings(IN_TESTS[code], code) == []
    assert [c for _, c in _findings(IN_TESTS[code], code, every, every)] == ["possible"]


def test_a_comment_naming_the_bug_is_no_documented_choice() -> None:
    source = """
        import torch.nn.functional as F
        from torch import nn
        class Net(nn.Module):
            def forward(self, x):
                return F.dropout(x, 0.5)  # training defaults to True, so this stays on in eval mode
        """
    assert _findings(source, "TRN604") == [(6, "certain")]


@pytest.mark.parametrize("fixture", [
    "manual_sgd__in_place_update_of_leaf.py", "classifier__retain_graph_in_training_loop.py",
    "residual_classifier__functional_dropout_in_eval.py", "ddp__ddp_model_moved_after_wrap.py",
    "ddp_train__model_moved_after_wrap.py", "classifier__loss_accumulated_with_graph.py"])
def test_the_textbook_fixtures_of_the_default_cores_stay_certain(fixture: str) -> None:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "fixtures" / "buggy" / fixture
    source = path.read_text(encoding="utf-8")
    marked = [i for i, line in enumerate(source.splitlines(), 1) if "# BUG" in line]
    found = [(f.line, f.confidence) for f in lint_source(source, fixture).findings
             if f.code in DEFAULT_RULE_CORES or f.code in CASES]
    assert found == [(line, "certain") for line in marked]


def test_a_tensor_attribute_pinned_to_a_gpu_by_init_is_certain() -> None:
    source = """
        import torch
        class Filter(torch.nn.Module):
            def __init__(self, strength, device):
                super().__init__()
                gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.kernel = torch.ones(3, 3, device=gpu) / strength   # certain: the module cannot move it
                self.bias = torch.zeros(3).cuda()                        # certain
                self.scale = torch.ones(1).to(device)                    # possible: the caller's device
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == [(7, "certain"), (8, "certain")]
    assert _findings(source, "TRN402", every, every) == [(7, "certain"), (8, "certain"), (9, "possible")]


def test_a_tensor_attribute_moved_where_it_is_read_is_not_certain_even_when_pinned() -> None:
    source = """
        import torch
        class Cache(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.keys = torch.zeros(n, 8).cuda()                     # possible: forward follows the input
                self.weight = torch.ones(n, device="cuda")              # possible: moved where read
                self.offsets = torch.arange(n).cuda()                   # certain: read where it was put
            def forward(self, q, idx):
                self.keys = self.keys.to(q)
                w = self.weight.view(1, -1).to(q.device)
                return self.keys[idx] * w + self.offsets[idx]
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == [(8, "certain")]
    assert _findings(source, "TRN402", every, every) == [(6, "possible"), (7, "possible"), (8, "certain")]


def test_a_tensor_attribute_updated_from_itself_at_run_time_is_certain() -> None:
    source = """
        import torch
        class Tracker(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.hits = torch.zeros(n)                              # certain: counted at run time
                self.table = torch.eye(n)                               # possible: a constant
                self.centre = None
                self.trace = None
            def observe(self, i, x):
                self.hits[i] += 1
                m = torch.mean(x, 0)
                if self.centre is None:
                    self.centre = m.clone()                             # certain: created once, then averaged
                self.centre = 0.9 * self.centre + 0.1 * m
                return self.table[i] * x
            def begin(self, x):
                self.trace = torch.zeros(x.shape[0])                    # possible: restarted per sequence
            def step(self, x):
                self.trace = self.trace + torch.sum(x, 1)
                return self.trace
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == [(6, "certain"), (14, "certain")]
    assert _findings(source, "TRN402", every, every) == [(6, "certain"), (7, "possible"), (14, "certain"),
                                                        (18, "possible")]


def test_a_memory_queue_filled_at_a_position_the_module_keeps_is_certain() -> None:
    source = """
        import torch
        class Bank(torch.nn.Module):
            def __init__(self, size):
                super().__init__()
                self.size = size
                self.keys = None
                self.ptr = 0
                self.cache = torch.zeros(size, 8)                       # possible: written at a given index
            def _allocate(self, dim):
                self.keys = torch.randn(self.size, dim)                 # certain: a queue, allocated once
            def forward(self, k, start):
                if self.keys is None:
                    self._allocate(k.shape[1])
                self.keys[self.ptr:self.ptr + k.shape[0]] = k.detach()
                self.ptr = (self.ptr + k.shape[0]) % self.size
                self.cache[start:start + k.shape[0]] = k
                return self.keys, self.cache
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == [(11, "certain")]
    assert _findings(source, "TRN402", every, every) == [(9, "possible"), (11, "certain")]


def test_a_tensor_attribute_of_a_lightning_module_is_certain() -> None:
    source = """
        import torch
        import pytorch_lightning as pl
        class Base(pl.LightningModule):
            pass
        class Ranker(Base):
            def __init__(self, n):
                super().__init__()
                self.offsets = torch.arange(0, n * 4, 4)                # certain: the Trainer moves the rest
                self.grid = torch.linspace(0, 1, n, device=self.device)  # certain: self.device is the CPU here
                self.margin = torch.tensor(0.5)                          # possible: 0-dim, works anywhere
                self.table = torch.eye(n)                               # possible: moved where read
                self.unused = torch.ones(n)                             # possible: never read once built
            def training_step(self, batch, i):
                scores = batch["scores"] + self.offsets + self.grid
                return (scores * self.table.to(scores.device)).sum() + self.margin
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == [(9, "certain"), (10, "certain")]
    assert _findings(source, "TRN402", every, every) == [(9, "certain"), (10, "certain"), (11, "possible"),
                                                        (12, "possible"), (13, "possible")]


def test_a_tensor_put_on_the_device_every_construction_picks_is_certain() -> None:
    source = """
        import torch
        class Edges(torch.nn.Module):
            def __init__(self, scale, where):
                super().__init__()
                self.kernel = torch.ones(3, 3).to(where) / scale        # certain: every caller picks the GPU
        class Blur(torch.nn.Module):
            def __init__(self, dev):
                super().__init__()
                self.kernel = torch.ones(5).to(device=dev)              # possible: one caller passes its own
        class Net(torch.nn.Module):
            def __init__(self, device):
                super().__init__()
                gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.edges = Edges(2.0, gpu)
                self.more = Edges(scale=3.0, where="cuda:0")
                self.blur = Blur(gpu)
                self.other = Blur(device)
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == [(6, "certain")]
    assert _findings(source, "TRN402", every, every) == [(6, "certain"), (10, "possible")]


def test_a_tensor_redrawn_by_a_method_init_calls_is_only_possible() -> None:
    source = """
        import torch
        from torch.autograd import Variable
        class NoisyLayer(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.n = n
                self.mu = torch.nn.Parameter(torch.zeros(n))
                self.redraw()
            def _noise(self, size):
                return torch.randn(size)
            def redraw(self):
                self.eps = Variable(self._noise(self.n))                  # possible: made on the CPU each time
                self.spare = torch.randn(self.n)                         # never read in forward: not reported
            def forward(self, x):
                return x + self.mu * self.eps
        class Agent:
            def __init__(self, layer):
                self.layer = layer
            def act(self, x):
                self.layer.redraw()
                return self.layer(x)
        class Table(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self._build(n)
            def _build(self, n):
                self.codes = torch.eye(n)                                # only its own class builds it
            def forward(self, i):
                return self.codes[i]
        class Other(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self._build(n)
            def _build(self, n):
                self.size = n
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == []
    assert _findings(source, "TRN402", every, every) == [(13, "possible")]


def test_modules_also_put_into_another_module_are_only_possible_in_a_plain_dict() -> None:
    source = """
        import torch.nn as nn
        class Adapter(nn.Module):
            def __init__(self, net, paths, n):
                super().__init__()
                self.net = net
                self.by_path = {}                                # possible: each one is set into net
                for p in paths:
                    wrapper = Wrapped(getattr(net, p))
                    put_back(net, p, wrapper)
                    self.by_path[p] = wrapper
                self.extra = {}                                  # certain: nothing else holds them
                for p in paths:
                    head = nn.Linear(n, n)
                    self.extra[p] = head
        class Wrapped(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN401") == [(12, "certain")]
    assert _findings(source, "TRN401", every, every) == [(7, "possible"), (12, "certain")]


def test_lazy_state_of_a_class_with_a_foreign_base_is_certain_when_it_restores_its_own_state() -> None:
    source = """
        import torch
        from somelib.losses import BaseLoss
        class CenteredLoss(BaseLoss):
            def __init__(self, momentum):
                super().__init__()
                self.momentum = momentum
                self.center = None
            def load_state_dict(self, state, strict=True):
                super().load_state_dict(state, strict)
            def update(self, out):
                batch = torch.mean(out, 0)
                self.center = self.center * self.momentum + batch * (1 - self.momentum)  # certain
            def forward(self, out):
                return out - self.center
        class Tracked(BaseLoss):
            def __init__(self):
                super().__init__()
                self.mean = None
            def update(self, out):
                self.mean = self.mean * 0.9 + torch.mean(out, 0) * 0.1              # possible: the base may own it
            def forward(self, out):
                return out - self.mean
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402") == [(13, "certain")]
    assert _findings(source, "TRN402", every, every) == [(13, "certain"), (21, "possible")]


def test_a_requires_grad_dummy_of_a_gradient_penalty_is_not_reported() -> None:
    source = """
        import torch
        class Penalty(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.tensor(1.0).requires_grad_()
                self.temperature = torch.ones(1, requires_grad=True)   # certain: never trained
            def forward(self, logits, labels):
                loss = torch.nn.functional.cross_entropy(logits * self.scale / self.temperature, labels)
                return torch.autograd.grad(loss, [self.scale], create_graph=True)[0].pow(2)
        """
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN402", every, every) == [(7, "certain")]


LIBRARY_EVALUATION = """
import torch

def accuracy(net, batches):
    hits = 0
    for inputs, labels in batches:
        hits += (net(inputs).argmax(1) == labels).sum().item()
    return hits
{caller}"""


@pytest.mark.parametrize(("packaged", "caller", "expected"), [
    # a package's function evaluating the model its caller hands it: grad mode is the caller's
    (True, "", "possible"),
    (True, "\n@torch.no_grad()\ndef report(net, batches):\n    return accuracy(net, batches)\n", None),
    # ...unless the package's own caller gets it wrong
    (True, "\ndef report(net, batches):\n    return accuracy(net, batches)\n", "certain"),
    # a script's function: its own evaluation
    (False, "", "certain"),
])
def test_a_library_function_leaves_grad_mode_to_its_caller(tmp_path, packaged, caller, expected) -> None:
    from lint_rules.api import Settings, lint_text

    folder = tmp_path / "metrics"
    folder.mkdir()
    if packaged:
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'metrics'\n")
        (folder / "__init__.py").write_text("")
    path = folder / "scores.py"
    source = textwrap.dedent(LIBRARY_EVALUATION).format(caller=caller)
    path.write_text(source)
    settings = Settings.resolve(select=["TRN601"], preview=True)
    found = [(f.line, f.confidence) for f in lint_text(source, path, settings).findings if f.code == "TRN601"]
    assert found == ([] if expected is None else [(6, expected)])


@pytest.mark.parametrize("loop", [
    # handed over before the scheduler steps: the right order
    "    run_epoch(net, batches, opt)\n    sched.step()\n    keep(net, opt)\n",
    # a step in sight decides: after it, the scheduler is in order
    "    run_epoch(net, batches, opt)\n    opt.step()\n    sched.step()\n",
])
def test_an_out_of_sight_call_handed_the_optimizer_first_is_in_order(loop: str) -> None:
    source = ("import torch\nfrom trainer_lib import run_epoch, keep\n"
              "opt = torch.optim.SGD(net.parameters(), lr=0.1)\nsched = torch.optim.lr_scheduler.StepLR(opt, 5)\n"
              "for epoch in range(10):\n" + loop)
    every = registry.default_codes(preview=True)
    assert _findings(source, "TRN801", every, every) == []


MODULE_METHOD_EVALUATION = """\
import torch
from torch import nn

class Tagger(nn.Module):
    def {method}(self, batches):
        self.eval()
        out = []
        for tokens, tags in batches:
            out.append(self(tokens).softmax(-1))
        return out
{tail}"""


def test_a_module_method_that_hands_out_only_token_ids_is_certain() -> None:
    # nothing it hands out carries a gradient: no caller can fine-tune through it
    from lint_rules.api import Settings, lint_text

    source = MODULE_METHOD_EVALUATION.format(method="token_features", tail="").replace(
        "self(tokens).softmax(-1)", "self(tokens).argmax(-1).tolist()")
    settings = Settings.resolve(select=["TRN601"], preview=True)
    found = [(f.line, f.confidence) for f in lint_text(source, "tagger.py", settings).findings if f.code == "TRN601"]
    assert found == [(8, "certain")]


@pytest.mark.parametrize(("method", "tail", "expected"), [
    # a module's own evaluation entry point: certain
    ("predict", "", "certain"),
    ("evaluate", "", "certain"),
    # any other method runs under its callers' grad mode: they may fine-tune through it
    ("token_features", "", "possible"),
    # ...unless the class trains itself: then its methods are its own evaluation
    ("token_features", "    def fit(self, opt, loss):\n        loss.backward()\n        opt.step()\n", "certain"),
    # called on an instance under no_grad in the same file: grad mode is settled
    ("token_features", "\n@torch.no_grad()\ndef test(tagger, batches):\n    return tagger.token_features(batches)\n",
     None),
])
def test_a_module_method_leaves_grad_mode_to_its_callers(method, tail, expected) -> None:
    from lint_rules.api import Settings, lint_text

    source = MODULE_METHOD_EVALUATION.format(method=method, tail=tail)
    settings = Settings.resolve(select=["TRN601"], preview=True)
    found = [(f.line, f.confidence) for f in lint_text(source, "tagger.py", settings).findings if f.code == "TRN601"]
    assert found == ([] if expected is None else [(8, expected)])
