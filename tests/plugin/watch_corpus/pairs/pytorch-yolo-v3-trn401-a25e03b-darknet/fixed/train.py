import torch
import torch.nn.functional as F

from darknet import Darknet

torch.manual_seed(0)
model = Darknet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images, targets = torch.randn(8, 3, 8, 8), torch.rand(8, 6, 8, 8)
for epoch in range(2):
    for i in range(0, 8, 4):
        optimizer.zero_grad()
        loss = F.mse_loss(model(images[i:i + 4]), targets[i:i + 4])
        loss.backward()
        optimizer.step()
print("trained", sum(p.numel() for p in model.parameters()), "parameters")
