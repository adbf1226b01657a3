"""Link prediction on a vessel graph: a GCN encodes the nodes, an MLP scores node pairs."""
import torch
import torch.nn.functional as F


class GCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, dropout):
        super().__init__()
        self.lin1 = torch.nn.Linear(in_channels, hidden_channels)
        self.lin2 = torch.nn.Linear(hidden_channels, out_channels)
        self.dropout = dropout

    def forward(self, x, adj_t):
        x = F.relu(adj_t @ self.lin1(x))
        x = F.dropout(x, p=self.dropout, training=self.training)
        return adj_t @ self.lin2(x)


class LinkPredictor(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, num_layers, dropout):
        super().__init__()
        self.lins = torch.nn.ModuleList([torch.nn.Linear(in_channels, hidden_channels)])
        for _ in range(num_layers - 2):
            self.lins.append(torch.nn.Linear(hidden_channels, hidden_channels))
        self.lins.append(torch.nn.Linear(hidden_channels, out_channels))
        self.dropout = dropout

    def forward(self, x_i, x_j):
        x = x_i * x_j
        for lin in self.lins[:-1]:
            x = F.dropout(F.relu(lin(x)), p=self.dropout, training=self.training)
        return torch.sigmoid(self.lins[-1](x))


def train(model, predictor, data, split_edge, optimizer, batch_size):
    model.train()
    predictor.train()
    pos_train_edge = split_edge["train"]["edge"]
    total_loss = torch.zeros(())
    for perm in torch.utils.data.DataLoader(range(pos_train_edge.size(0)), batch_size, shuffle=True):
        optimizer.zero_grad()
        h = model(data["x"], data["adj_t"])
        edge = pos_train_edge[perm].t()
        pos_out = predictor(h[edge[0]], h[edge[1]])
        neg = torch.randint(0, data["x"].size(0), edge.size(), dtype=torch.long)
        neg_out = predictor(h[neg[0]], h[neg[1]])
        loss = -torch.log(pos_out + 1e-15).mean() - torch.log(1 - neg_out + 1e-15).mean()
        loss.backward()
        optimizer.step()
        total_loss += loss.detach() * perm.numel()
    return total_loss / pos_train_edge.size(0)


@torch.no_grad()
def test(model, predictor, data, split_edge, batch_size):
    model.eval()
    predictor.eval()

    h = model(data["x"], data["adj_t"])
    edge = split_edge["valid"]["edge"].t()
    pos_valid = predictor(h[edge[0]], h[edge[1]])
    neg = split_edge["valid"]["edge_neg"].t()
    neg_valid = predictor(h[neg[0]], h[neg[1]])
    return (pos_valid.squeeze(-1) > neg_valid.squeeze(-1)).float().mean()


def main():
    torch.manual_seed(0)
    n = 20
    adj = (torch.rand(n, n) < 0.2).float()
    adj = ((adj + adj.t() + torch.eye(n)) > 0).float()
    adj_t = adj / adj.sum(1, keepdim=True)
    data = {"x": torch.randn(n, 8), "adj_t": adj_t}
    edges = adj.nonzero()
    split_edge = {"train": {"edge": edges[:24]}, "valid": {"edge": edges[24:32],
                                                            "edge_neg": torch.randint(0, n, (8, 2))}}
    model = GCN(8, 16, 16, dropout=0.5)
    predictor = LinkPredictor(16, 16, 1, num_layers=3, dropout=0.5)
    optimizer = torch.optim.Adam(list(model.parameters()) + list(predictor.parameters()), lr=0.01)
    for epoch in range(2):
        loss = train(model, predictor, data, split_edge, optimizer, batch_size=8)
        result = test(model, predictor, data, split_edge, batch_size=8)
        print(f"epoch {epoch}: loss {float(loss):.4f} valid ranking {float(result):.3f}")


if __name__ == "__main__":
    main()
