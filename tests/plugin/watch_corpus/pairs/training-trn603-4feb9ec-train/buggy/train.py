"""Train SSD300 towards a target average precision, evaluating every few iterations (MLPerf style)."""
import torch

from ssd300 import SSD300, Loss


def coco_eval(model, val_batches, threshold):
    model.eval()
    correct, total = torch.zeros(()), 0
    with torch.no_grad():
        for img, gloc, glabel in val_batches:
            _, plabel = model(img)
            correct += (plabel.argmax(1) == glabel).sum()
            total += glabel.numel()
    ap = float(correct / total)
    print(f"Current AP: {ap:.5f} AP goal: {threshold:.5f}")
    return ap >= threshold


def train300_mlperf_coco(args):
    torch.manual_seed(args["seed"])
    ssd300 = SSD300()
    ssd300.train()
    loss_func = Loss()
    optim = torch.optim.SGD(ssd300.parameters(), lr=args["lr"], momentum=0.9, weight_decay=5e-4)
    images = torch.randn(20, 3, 8, 8)
    gloc, glabel = torch.randn(20, 4, 64), torch.randint(0, 4, (20, 64))
    train_batches = [(images[i:i + 4], gloc[i:i + 4], glabel[i:i + 4]) for i in range(0, 16, 4)]
    val_batches = [(images[16:], gloc[16:], glabel[16:])]
    iter_num = 0
    for epoch in range(args["epochs"]):
        for img, bbox, label in train_batches:
            ploc, plabel = ssd300(img)  # BUG TRN603
            loss = loss_func(ploc, plabel, bbox, label)
            loss.backward()
            optim.step()
            optim.zero_grad()
            iter_num += 1
            if iter_num % args["evaluation_interval"] == 0:
                if coco_eval(ssd300, val_batches, args["threshold"]):
                    return True
    return False


if __name__ == "__main__":
    train300_mlperf_coco({"seed": 0, "lr": 0.05, "epochs": 2, "evaluation_interval": 3, "threshold": 0.99})
