"""Mixed precision on the CPU: the forward under torch.autocast(bfloat16), the loss scaled by a GradScaler,
the gradients unscaled before their norm is clipped, then scaler.step() and scaler.update()."""
import torch
import torch.nn.functional as F
from torch import nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cpu")
    x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
    for epoch in range(2):
        total = torch.zeros(())
        for i in range(0, 32, 8):
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x[i:i + 8])
            loss = F.cross_entropy(logits.float(), y[i:i + 8])
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            total += loss.detach()
        print(f"epoch {epoch}: loss {float(total) / 4:.4f}")


if __name__ == "__main__":
    main()
