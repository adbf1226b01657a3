"""Train an attentional factorization machine on click logs, then measure the test AUC."""
import torch
from torch.utils.data import DataLoader, TensorDataset

from layer import AttentionalFactorizationMachine, FeaturesEmbedding, FeaturesLinear


class AttentionalFactorizationMachineModel(torch.nn.Module):
    def __init__(self, field_dims, embed_dim, attn_size, dropouts):
        super().__init__()
        self.num_fields = len(field_dims)
        self.embedding = FeaturesEmbedding(field_dims, embed_dim)
        self.linear = FeaturesLinear(field_dims)
        self.afm = AttentionalFactorizationMachine(embed_dim, attn_size, dropouts)

    def forward(self, x):
        x = self.linear(x) + self.afm(self.embedding(x))
        return torch.sigmoid(x.squeeze(1))


def get_dataset(field_dims, n=96):
    fields = torch.stack([torch.randint(0, d, (n,)) for d in field_dims], dim=1)
    target = (fields[:, 0] % 2 == fields[:, 1] % 2).float()
    return TensorDataset(fields, target)


def auc(target, predicted):
    positive, negative = predicted[target == 1], predicted[target == 0]
    return (positive.unsqueeze(1) > negative.unsqueeze(0)).float().mean().item()


def train(model, optimizer, data_loader, criterion):
    model.train()
    total_loss = 0
    for fields, target in data_loader:
        y = model(fields)
        loss = criterion(y, target)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss.detach()
    return total_loss.item() / len(data_loader)


def test(model, data_loader):
    model.eval()
    targets, predicts = list(), list()
    with torch.no_grad():
        for fields, target in data_loader:
            y = model(fields)
            targets.append(target)
            predicts.append(y)
    return auc(torch.cat(targets), torch.cat(predicts))


def main(epoch=2, learning_rate=0.001, batch_size=16, weight_decay=1e-6):
    torch.manual_seed(0)
    field_dims = [7, 5, 9, 4]
    train_loader = DataLoader(get_dataset(field_dims), batch_size=batch_size, shuffle=True)
    test_loader = DataLoader(get_dataset(field_dims, n=48), batch_size=batch_size)
    model = AttentionalFactorizationMachineModel(field_dims, embed_dim=16, attn_size=16, dropouts=(0.2, 0.2))
    criterion = torch.nn.BCELoss()
    optimizer = torch.optim.Adam(params=model.parameters(), lr=learning_rate, weight_decay=weight_decay)
    for epoch_i in range(epoch):
        loss = train(model, optimizer, train_loader, criterion)
        print("epoch", epoch_i, "loss", round(loss, 4), "validation auc", round(test(model, test_loader), 4))


if __name__ == "__main__":
    main()
