"""Train a multi-label topic classifier on pooled word2vec-style embeddings with the model trainer's loop."""
import random

import torch

from text_classification_model import DocumentPoolEmbeddings, Dictionary, TextClassifier

TOPICS = ["sports", "politics", "science", "economy"]


def make_corpus(n=96, vocab=200, length=8, noise=0.1):
    rng = random.Random(0)
    topic_of_word = [rng.randrange(len(TOPICS)) for _ in range(vocab)]
    sentences, labels = [], []
    for _ in range(n):
        words = [rng.randrange(vocab) for _ in range(length)]
        topics = sorted({TOPICS[topic_of_word[w]] for w in words[:2]})
        if rng.random() < noise:  # annotation noise: a topic the text is not about
            topics = sorted(set(topics) | {rng.choice(TOPICS)})
        sentences.append(words)
        labels.append(topics)
    return torch.tensor(sentences), labels


class ModelTrainer:
    def __init__(self, model, corpus):
        self.model, self.corpus = model, corpus

    def train(self, learning_rate=0.1, mini_batch_size=16, max_epochs=3):
        optimizer = torch.optim.SGD(self.model.parameters(), lr=learning_rate)
        sentences, labels = self.corpus
        for epoch in range(max_epochs):
            self.model.train()
            order = torch.randperm(len(labels)).tolist()
            train_loss = 0
            for start in range(0, len(order), mini_batch_size):
                batch = order[start:start + mini_batch_size]
                loss = self.model.forward_loss(sentences[batch], [labels[i] for i in batch])
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
                optimizer.step()
                train_loss += loss.detach()
            print("epoch", epoch, "loss", round(train_loss.item() / (len(order) // mini_batch_size), 4))


if __name__ == "__main__":
    torch.manual_seed(0)
    vectors = torch.randn(200, 100) * 4.0
    model = TextClassifier(DocumentPoolEmbeddings(vectors), Dictionary(TOPICS, multi_label=True), multi_label=True)
    ModelTrainer(model, make_corpus()).train()
