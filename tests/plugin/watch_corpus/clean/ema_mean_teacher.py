"""Mean teacher for semi-supervised learning: the student trains on labelled data plus a consistency loss
toward the teacher (run in eval mode, under no_grad); the teacher is an exponential moving average of the
student (no gradients, in no optimizer) updated after each step."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


@torch.no_grad()
def update_ema(teacher, student, decay):
    for t, s in zip(teacher.parameters(), student.parameters()):
        t.mul_(decay).add_(s, alpha=1 - decay)
    for tb, sb in zip(teacher.buffers(), student.buffers()):
        tb.copy_(sb)


def main():
    torch.manual_seed(0)
    student = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 4))
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.Adam(student.parameters(), lr=1e-3)
    labelled = torch.utils.data.TensorDataset(torch.randn(24, 10), torch.randint(0, 4, (24,)))
    unlabelled = torch.randn(48, 10)
    loader = torch.utils.data.DataLoader(labelled, batch_size=8, shuffle=True)
    step = 0
    teacher.eval()
    for epoch in range(2):
        student.train()
        for x, y in loader:
            u = unlabelled[torch.randint(0, len(unlabelled), (8,))]
            noisy = u + 0.1 * torch.randn_like(u)
            with torch.no_grad():
                target = F.softmax(teacher(u), dim=1)
            consistency = F.mse_loss(F.softmax(student(noisy), dim=1), target)
            loss = F.cross_entropy(student(x), y) + 2.0 * consistency
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            update_ema(teacher, student, decay=min(0.99, (step + 1) / (step + 10)))
        with torch.no_grad():
            agreement = (teacher(unlabelled).argmax(1) == student.eval()(unlabelled).argmax(1)).float().mean()
        print(f"epoch {epoch}: teacher/student agreement {float(agreement):.2f}")


if __name__ == "__main__":
    main()
