# realbug-expected: TRN101 shape=rule-missing case=prediff-trn101-67a8589-train_vae_sevirlr
import torch


class AutoencoderTask:
    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.reconstruction_loss(batch) / self.accumulate
        self.manual_backward(loss)
        if (batch_idx + 1) % self.accumulate == 0:
            opt.step()
            opt.zero_grad()
