# realbug-expected: TRN801 shape=cross-file case=deformable-protopnet-trn801-e6a7d39-main
import torch
import engine


def main(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5)
    for epoch in range(epochs):
        schedule.step()
        engine.run_epoch(model, loader, optimizer)
