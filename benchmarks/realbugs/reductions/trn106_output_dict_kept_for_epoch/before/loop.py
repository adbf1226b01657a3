# realbug-expected: TRN106 shape=container case=packnet-sfm-trn106-3959960-horovod_trainer
import torch


def train_epoch(module, loader, opt):
    history = []
    for batch in loader:
        opt.zero_grad()
        out = module.training_step(batch)
        out["loss"].backward()
        opt.step()
        history.append(out)
    return history
