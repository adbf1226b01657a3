# realbug-expected: TRN702 shape=spelling case=glacier_mapping-trn702-bb66492-frame
import torch


class Session:
    def save(self, folder, epoch):
        torch.save(self.model.state_dict(), f"{folder}/model_{epoch}.pt")
        torch.save(self.optimizer.state_dict(), f"{folder}/optim_{epoch}.pt")
