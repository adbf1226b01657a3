# realbug-expected: TRN603 shape=helper case=ncsn-trn603-8ec8ec4-anneal_runner
import torch


def denoising_loss(net, x):
    noise = torch.randn_like(x)
    return ((net(x + noise) + noise) ** 2).mean()


def train(net, opt, loader, test_x, steps):
    for step, x in enumerate(loader):
        net.train()
        loss = denoising_loss(net, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            net.eval()
            with torch.no_grad():
                print(denoising_loss(net, test_x).item())
