"""Generation loops: a loop that feeds the model its own output (sampling, decoding, a diffusion
sampler) in a function that does not train (analysis/evaluation.py, FileFacts.generation_calls)."""

from __future__ import annotations

import textwrap

import libcst as cst

from lint_rules.analysis.evaluation import FileFacts
from lint_rules.analysis.model import FileModel

_SRC = """
import torch
from torch import nn

def sample(net, x, steps):
    xs = [x]
    for t in reversed(steps):
        cur = xs[-1]
        eps = net(cur, t)
        xs.append(cur - 0.1 * eps)
    return xs

class CharModel(nn.Module):
    def generate(self, n):
        hidden = self.init_hidden(1)
        token = torch.zeros(1, 1).long()
        out = []
        while len(out) < n:
            logits, hidden = self.forward(token, hidden)
            token = torch.multinomial(logits.softmax(-1), 1)
            out.append(token)
        return out

def decode(model, tokens, n):
    for _ in range(n):
        logits = model(tokens)
        tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return tokens

def rollout(policy, env, horizon):
    obs = env.reset()
    for _ in range(horizon):
        action = policy(obs)
        obs = env.step(action)

def bptt(model, xs, h, opt):
    loss = 0
    for x in xs:
        out, h = model(x, h)
        loss = loss + out.sum()
    loss.backward()
    opt.step()

def same_input(model, x, n):
    outs = []
    for _ in range(n):
        outs.append(model(x))
    return outs

def ema(model, avg, steps):
    for _ in range(steps):
        y = model(avg)
        avg.mul_(0.9)

class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8)

    def _unroll(self, hidden, done):
        state = self.init_state()
        outs = []
        for h, d in zip(hidden, done):
            h, state = self.lstm(h.unsqueeze(0), (state[0] * (1 - d), state[1]))
            outs.append(h)
        return outs

def second_stage(x, classifier, crops):
    for i, d in enumerate(x):
        ims = [crop(c) for c in crops]
        picked = classifier(torch.stack(ims)).argmax(1)
        x[i] = d[picked == 0]
"""


def _facts() -> tuple[FileFacts, dict[str, cst.CSTNode]]:
    model = FileModel(cst.parse_module(textwrap.dedent(_SRC)))
    loops = {}
    for fn in model.nodes(cst.FunctionDef):
        found = model.within(cst.For, fn) + model.within(cst.While, fn)
        if found:
            loops[fn.name.value] = found[0]
    return model.fact(FileFacts), loops


def test_loops_that_feed_the_model_its_output_generate() -> None:
    facts, loops = _facts()
    generating = {name: [chosen for _, chosen in facts.generation_calls(loop)] for name, loop in loops.items()}
    generating = {name: chosen for name, chosen in generating.items() if chosen}
    # an environment's observation ends the chain, a loop whose function trains is no inference,
    # the same input every time is no feedback, nor is an in-place update of the input from
    # elsewhere, nor an index into a list the output only filters (x[i] binds x, not i)
    assert generating == {"sample": [False], "generate": [True], "decode": [True], "_unroll": [False]}


def test_the_generation_call_is_the_model_call_fed_back_through_a_choice() -> None:
    facts, loops = _facts()
    # the sampled token comes back; the hidden state is fed back too, but the token decides
    [(call, chosen)] = facts.generation_calls(loops["generate"])
    assert cst.Module([]).code_for_node(call.func) == "self.forward" and chosen
    # a recurrent forward pass feeds back a differentiable state: no choice
    [(call, chosen)] = facts.generation_calls(loops["_unroll"])
    assert cst.Module([]).code_for_node(call.func) == "self.lstm" and not chosen


def test_self_in_a_module_method_is_a_model_call_and_a_loss_module_is_not() -> None:
    model = FileModel(cst.parse_module(textwrap.dedent("""
        import torch
        from torch import nn
        class Tagger(nn.Module):
            def predict(self, batches):
                for batch in batches:
                    self(batch)
                    self.forward(batch)
        class Plain:
            def predict(self, batches):
                for batch in batches:
                    self(batch)
        def evaluate(model, val_loader):
            crit = nn.CrossEntropyLoss()
            for x, y in val_loader:
                with torch.no_grad():
                    out = model(x)
                crit(out, y)
        """)))
    facts = model.fact(FileFacts)
    loops = list(model.nodes(cst.For))
    code = cst.Module([]).code_for_node
    assert [code(c.func) for c in facts.evaluation_calls(loops[0])] == ["self", "self.forward"]
    assert facts.evaluation_calls(loops[1]) == []  # self of a class that is no module
    assert [code(c.func) for c in facts.evaluation_calls(loops[2])] == ["model"]  # not the loss module
