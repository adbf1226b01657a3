import torch


def train_one_epoch(net, batches, loss_fn, opt, device):
    net.train()
    running = 0.0
    for inputs, targets in batches:
        inputs, targets = inputs.to(device), targets.to(device)
        loss = loss_fn(net(inputs), targets)
        loss.backward()
        opt.zero_grad()  # BUG TRN101
        opt.step()
        running += loss  # BUG TRN106
    return running / len(batches)


def finetune(net, batches, loss_fn, opt, steps):
    for step, (inputs, targets) in enumerate(batches):
        loss = loss_fn(net(inputs), targets)
        loss.backward()
        opt.step()  # BUG TRN102
        if step == steps:
            break


def evaluate(net, batches):
    correct = 0
    for inputs, targets in batches:  # BUG TRN601  # BUG TRN602 (preview)
        outputs = net(inputs)
        correct += (outputs.argmax(1) == targets).sum().item()
    return correct
