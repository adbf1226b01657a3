"""Fine-tune a small vision-and-language model to tell real captions from foiled ones, evaluating each epoch."""
import argparse

import torch
from torch import nn
from torch.nn import CrossEntropyLoss


class TinyViLBERT(nn.Module):
    def __init__(self, vocab=30, dim=16, feat_dim=12):
        super().__init__()
        self.words = nn.Embedding(vocab, dim)
        self.segments = nn.Embedding(2, dim)
        self.image = nn.Linear(feat_dim + 5, dim)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(2 * dim, 2)

    def forward(self, captions, features, spatials, segment_ids, input_mask, image_mask):
        text = (self.words(captions) + self.segments(segment_ids)) * input_mask[..., None]
        vision = self.image(torch.cat([features, spatials], -1)) * image_mask[..., None]
        pooled = torch.cat([text.mean(1), vision.mean(1)], -1)
        return self.classifier(self.dropout(pooled))


def make_batches(n, batch_size, generator):
    batches = []
    for _ in range(n):
        features = torch.randn(batch_size, 4, 12, generator=generator)
        spatials = torch.rand(batch_size, 4, 5, generator=generator)
        image_mask = torch.ones(batch_size, 4)
        captions = torch.randint(0, 30, (batch_size, 6), generator=generator)
        target = torch.randint(0, 2, (batch_size,), generator=generator)
        input_mask = torch.ones(batch_size, 6)
        segment_ids = torch.zeros(batch_size, 6, dtype=torch.long)
        batches.append((features, spatials, image_mask, captions, target, input_mask, segment_ids))
    return batches


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_train_epochs", type=int, default=2)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    train_dataloader = make_batches(3, 8, generator)
    eval_dataloader = make_batches(2, 8, generator)
    model = TinyViLBERT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    loss_fct = CrossEntropyLoss(ignore_index=-1)

    model.train()
    for epochId in range(args.num_train_epochs):
        for step, batch in enumerate(train_dataloader):
            features, spatials, image_mask, captions, target, input_mask, segment_ids = batch
            pred = model(captions, features, spatials, segment_ids, input_mask, image_mask)
            loss = loss_fct(pred, target)
            loss.backward()
            optimizer.step()
            model.zero_grad()

        model.eval()
        eval_loss, eval_score = evaluate(args, model, eval_dataloader)
        model.train()
        print(f"epoch {epochId}: eval loss {float(eval_loss):.3f} score {float(eval_score):.3f}")


def evaluate(args, model, dataloader):
    total_loss = 0
    num_data = 0
    score = 0
    loss_fct = CrossEntropyLoss(ignore_index=-1, reduction="none")
    for batch in iter(dataloader):
        features, spatials, image_mask, captions, target, input_mask, segment_ids = batch
        pred = model(captions, features, spatials, segment_ids, input_mask, image_mask)  # BUG TRN601
        loss = loss_fct(pred, target)
        _, logits = torch.max(pred, 1)
        score += (logits == target).sum()
        total_loss += loss.sum()
        num_data += loss.size(0)
    return total_loss / num_data, score / num_data


if __name__ == "__main__":
    main()
