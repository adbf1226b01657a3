"""FastSpeech 2 training loop with mixed precision: spectrogram prediction from phoneme features."""
import torch
import torch.nn.functional as F


def train_loop(net, train_dataset, device="cpu", batch_size=4, epochs=2, lr=1e-3, warmup_steps=4):
    net = net.to(device)
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=batch_size, shuffle=True, drop_last=True)
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup_steps))
    scaler = torch.amp.GradScaler(device)
    step_counter = 0
    for epoch in range(epochs):
        net.train()
        train_losses_this_epoch = []
        for text, speech in train_loader:
            with torch.autocast(device, dtype=torch.bfloat16):
                train_loss = F.l1_loss(net(text).float(), speech)
            train_losses_this_epoch.append(train_loss.detach())
            optimizer.zero_grad()
            scaler.scale(train_loss).backward()
            step_counter += 1
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
        print(f"epoch {epoch}: train loss {float(torch.stack(train_losses_this_epoch).mean()):.4f}")
