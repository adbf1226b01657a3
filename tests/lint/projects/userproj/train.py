import torch


def train_one_epoch(net, batches, loss_fn, opt, device):
    net.train()
    running = 0.0
    for inputs, targets in batches:
        inputs, targets = inputs.to(device), targets.to(device)
        outputs = net(inputs)
        loss = loss_fn(outputs, targets)  # BUG TRN501
        loss.backward()
        opt.zero_grad()  # BUG TRN101
        opt.step()
        running += loss  # BUG TRN106
        hits = 0
        for guess, target in zip(outputs.argmax(1), targets):
            hits += (guess == target).item()  # BUG TRN201
    return running / len(batches)


def finetune(net, batches, loss_fn, opt, steps):
    for step, (inputs, targets) in enumerate(batches):
        loss = loss_fn(net(inputs), targets)  # BUG TRN501
        loss.backward()
        opt.step()  # BUG TRN102
        if step == steps:
            break


def evaluate(net, batches):
    correct = 0
    for inputs, targets in batches:  # BUG TRN601  # BUG TRN602
        outputs = net(inputs)
        correct += (outputs.argmax(1) == targets).sum().item()
    return correct
