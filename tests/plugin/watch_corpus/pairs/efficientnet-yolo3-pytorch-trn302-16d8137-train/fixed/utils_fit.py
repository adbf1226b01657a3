"""One epoch of detector training and validation, as the training script calls it."""
import torch


def fit_one_epoch(model_train, model, yolo_loss, loss_history, optimizer, epoch, epoch_step, epoch_step_val, gen,
                  gen_val, Epoch, local_rank=0):
    loss = torch.zeros(())
    model_train.train()
    for iteration, batch in enumerate(gen):
        if iteration >= epoch_step:
            break
        images, targets = batch
        optimizer.zero_grad()
        outputs = model_train(images)
        loss_value = yolo_loss(outputs, targets)
        loss_value.backward()
        optimizer.step()
        loss += loss_value.detach()

    val_loss = torch.zeros(())
    model_train.eval()
    with torch.no_grad():
        for iteration, (images, targets) in enumerate(gen_val):
            if iteration >= epoch_step_val:
                break
            val_loss += yolo_loss(model_train(images), targets)
    if local_rank == 0:
        loss_history.append((float(loss / epoch_step), float(val_loss / epoch_step_val)))
        print(f"Epoch {epoch + 1}/{Epoch} total loss {loss_history[-1][0]:.3f} val loss {loss_history[-1][1]:.3f}")
