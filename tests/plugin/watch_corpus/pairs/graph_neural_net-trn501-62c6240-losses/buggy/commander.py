"""Train a siamese graph network to match the nodes of a graph with those of a noisy, permuted copy."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from losses import triplet_loss


class Simple_Node_Embedding(nn.Module):
    def __init__(self, original_features_num, num_blocks, in_features, out_features):
        super().__init__()
        layers = [nn.Linear(original_features_num, in_features), nn.ReLU()]
        for _ in range(num_blocks - 1):
            layers += [nn.Linear(in_features, in_features), nn.ReLU()]
        self.blocks = nn.Sequential(*layers)
        self.last = nn.Linear(in_features, out_features)

    def forward(self, adjacency):
        # one round of message passing: each node sums its neighbours' features
        h = self.blocks(adjacency)
        return self.last(adjacency @ h / adjacency.shape[-1] + h)


class Siamese_Model(nn.Module):
    def __init__(self, original_features_num, num_blocks, in_features, out_features):
        super().__init__()
        self.node_embedder = Simple_Node_Embedding(original_features_num, num_blocks, in_features, out_features)

    def forward(self, x):
        x = x.permute(1, 0, 2, 3)
        x1 = self.node_embedder(x[0])
        x2 = self.node_embedder(x[1])
        return torch.matmul(x1, torch.transpose(x2, 1, 2))


def make_pairs(n_graphs=24, n_vertices=8, edge_density=0.3, noise=0.05):
    first = (torch.rand(n_graphs, n_vertices, n_vertices) < edge_density).float()
    first = ((first + first.transpose(1, 2)) > 0).float()
    flip = (torch.rand(n_graphs, n_vertices, n_vertices) < noise).float()
    second = (first + flip) % 2
    return TensorDataset(torch.stack([first, second], dim=1), torch.zeros(n_graphs))


def get_optimizer(args, model):
    optimizer = torch.optim.Adam(model.parameters(), lr=args["lr"], amsgrad=False)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=args["scheduler_decay"],
                                                           patience=args["scheduler_step"])
    return optimizer, scheduler


def train_triplet(train_loader, model, optimizer, criterion, epoch):
    model.train()
    running = 0
    for i, (data, target) in enumerate(train_loader):
        raw_scores = model(data)
        loss = criterion(raw_scores, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return running / len(train_loader)


def val_triplet(val_loader, model, criterion):
    model.eval()
    total = 0
    with torch.no_grad():
        for data, target in val_loader:
            total += criterion(model(data), target)
    return total / len(val_loader)


def main(args):
    torch.manual_seed(0)
    model = Siamese_Model(original_features_num=8, num_blocks=2, in_features=16, out_features=16)
    optimizer, scheduler = get_optimizer(args, model)
    criterion = triplet_loss()
    train_loader = DataLoader(make_pairs(), batch_size=args["batch_size"], shuffle=True)
    val_loader = DataLoader(make_pairs(8), batch_size=args["batch_size"])
    for epoch in range(args["epoch"]):
        train_loss = train_triplet(train_loader, model, optimizer, criterion, epoch)
        val_loss = val_triplet(val_loader, model, criterion)
        scheduler.step(val_loss)
        print("epoch", epoch, "train loss", round(float(train_loss), 4), "val loss", round(float(val_loss), 4))


if __name__ == "__main__":
    main({"lr": 1e-3, "scheduler_decay": 0.5, "scheduler_step": 3, "batch_size": 8, "epoch": 2})
