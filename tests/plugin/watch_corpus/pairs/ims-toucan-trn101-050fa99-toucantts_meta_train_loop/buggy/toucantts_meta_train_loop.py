"""Multi-language TTS training: prime the language embeddings, then train on every language in turn."""
import random

import torch
import torch.nn.functional as F


def less_loss(language_ids, embeddings, distance_table):
    """Pull the embeddings' pairwise distances towards a table of known language distances."""
    ids = torch.tensor(language_ids)
    predicted = torch.cdist(embeddings, embeddings)
    return F.mse_loss(predicted, distance_table[ids][:, ids])


def train_loop(model, datasets, valid_language_ids, distance_table, steps=6, warmup_steps=2, batch_size=4,
               lr=1e-2):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    print("Priming the language embedding space...")
    less_values = []
    for i in range(warmup_steps * 2):
        language_ids = random.sample(valid_language_ids, batch_size)
        language_embeddings = model.language_embedding(torch.LongTensor(language_ids))
        less_value = less_loss(language_ids, language_embeddings, distance_table)
        less_values.append(less_value.detach())
        less_value.backward()
        optimizer.zero_grad()  # BUG TRN101
        optimizer.step()
    print("primed, mean distance loss", float(torch.stack(less_values).mean()))

    iterators = [iter(d) for d in datasets]
    for step in range(steps):
        lang = step % len(datasets)
        text, target = next(iterators[lang])
        prediction = model(text, torch.full((text.shape[0],), lang, dtype=torch.long))
        train_loss = F.l1_loss(prediction, target)
        optimizer.zero_grad()
        train_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return model
