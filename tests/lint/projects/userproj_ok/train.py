import torch


def train_one_epoch(net, batches, loss_fn, opt, device):
    net.train()
    running = 0.0
    for inputs, targets in batches:
        inputs, targets = inputs.to(device), targets.to(device)
        opt.zero_grad()
        outputs = net(inputs)
        loss = loss_fn(outputs, targets)
        loss.backward()
        opt.step()
        running += loss.detach()
        hits = (outputs.argmax(1) == targets).sum()
    return running / len(batches)


def finetune(net, batches, loss_fn, opt, steps):
    net.train()
    for step, (inputs, targets) in enumerate(batches):
        opt.zero_grad()
        loss = loss_fn(net(inputs), targets)
        loss.backward()
        opt.step()
        if step == steps:
            break


@torch.no_grad()
def evaluate(net, batches):
    net.eval()
    correct = 0
    for inputs, targets in batches:
        outputs = net(inputs)
        correct += (outputs.argmax(1) == targets).sum()
    net.train()
    return correct
