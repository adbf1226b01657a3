"""Text classification model: document embeddings, then a linear decoder to the labels; single or multi-label."""
import torch
import torch.nn as nn


class Dictionary:
    def __init__(self, items, multi_label=False):
        self.idx2item = list(items)
        self.item2idx = {item: i for i, item in enumerate(self.idx2item)}
        self.multi_label = multi_label

    def __len__(self):
        return len(self.idx2item)


class DocumentPoolEmbeddings(nn.Module):
    """Pooled static word embeddings (word2vec-like vectors: unnormalised, large norms)."""

    def __init__(self, vectors, pooling="max"):
        super().__init__()
        self.word_embeddings = nn.Embedding.from_pretrained(vectors, freeze=True)
        self.embedding_length = vectors.shape[1]
        self.pooling = pooling

    def embed(self, sentences):
        vectors = self.word_embeddings(sentences)
        return vectors.max(dim=1).values if self.pooling == "max" else vectors.mean(dim=1)


def convert_labels_to_one_hot(label_list, label_dict):
    return [[1 if l in labels else 0 for l in label_dict.idx2item] for labels in label_list]


class TextClassifier(nn.Module):
    def __init__(self, document_embeddings, label_dictionary, multi_label, multi_label_threshold=0.5):
        super().__init__()
        self.document_embeddings = document_embeddings
        self.label_dictionary = label_dictionary
        self.multi_label = multi_label
        self.multi_label_threshold = multi_label_threshold
        self.decoder = nn.Linear(self.document_embeddings.embedding_length, len(self.label_dictionary))
        self._init_weights()
        if multi_label:
            self.loss_function = nn.BCEWithLogitsLoss()
        else:
            self.loss_function = nn.CrossEntropyLoss()

    def _init_weights(self):
        nn.init.xavier_uniform_(self.decoder.weight)

    def forward(self, sentences):
        text_embedding_tensor = self.document_embeddings.embed(sentences)
        label_scores = self.decoder(text_embedding_tensor)
        return label_scores

    def forward_loss(self, sentences, labels):
        scores = self.forward(sentences)
        return self._calculate_loss(scores, labels)

    def _labels_to_one_hot(self, labels):
        one_hot = convert_labels_to_one_hot(labels, self.label_dictionary)
        return torch.tensor(one_hot, dtype=torch.float)

    def _labels_to_indices(self, labels):
        return torch.tensor([self.label_dictionary.item2idx[l[0]] for l in labels])

    def _calculate_loss(self, label_scores, labels):
        if self.multi_label:
            return self._calculate_multi_label_loss(label_scores, labels)
        return self._calculate_single_label_loss(label_scores, labels)

    def _calculate_multi_label_loss(self, label_scores, labels):
        return self.loss_function(label_scores, self._labels_to_one_hot(labels))

    def _calculate_single_label_loss(self, label_scores, labels):
        return self.loss_function(label_scores, self._labels_to_indices(labels))
