"""A small scikit-learn style wrapper around a torch module: fit() runs the training loop for the user."""
import torch


class NeuralNet:
    def __init__(self, module, criterion, optimizer=torch.optim.SGD, lr=0.01, max_epochs=10, batch_size=32,
                 valid_fraction=0.2, **module_kwargs):
        self.module, self.criterion, self.optimizer = module, criterion, optimizer
        self.lr, self.max_epochs, self.batch_size = lr, max_epochs, batch_size
        self.valid_fraction, self.module_kwargs = valid_fraction, module_kwargs
        self.history = []

    def initialize(self):
        self.module_ = self.module(**self.module_kwargs)
        self.criterion_ = self.criterion()
        self.optimizer_ = self.optimizer(self.module_.parameters(), lr=self.lr)
        return self

    def infer(self, x):
        return self.module_(x)

    def get_loss(self, y_pred, y_true, training=False):
        return self.criterion_(y_pred, y_true)

    def train_step_single(self, xi, yi):
        self.module_.train()
        self.optimizer_.zero_grad()
        y_pred = self.infer(xi)
        loss = self.get_loss(y_pred, yi, training=True)
        loss.backward()
        return loss

    def train_step(self, xi, yi):
        # the optimizer gets a closure, as LBFGS needs one and every other optimizer accepts
        losses = []

        def step_fn():
            losses.append(self.train_step_single(xi, yi))
            return losses[-1]

        self.optimizer_.step(step_fn)
        return losses[0]

    def validation_step(self, xi, yi):
        self.module_.eval()
        with torch.no_grad():
            y_pred = self.infer(xi)
            return self.get_loss(y_pred, yi, training=False)

    def batches(self, X, y):
        for start in range(0, len(X), self.batch_size):
            yield X[start:start + self.batch_size], y[start:start + self.batch_size]

    def fit_loop(self, X, y):
        n_valid = int(len(X) * self.valid_fraction)
        X_train, y_train, X_valid, y_valid = X[n_valid:], y[n_valid:], X[:n_valid], y[:n_valid]
        for epoch in range(self.max_epochs):
            train_loss, n_train = 0.0, 0
            for xi, yi in self.batches(X_train, y_train):
                train_loss += self.train_step(xi, yi).detach() * len(xi)
                n_train += len(xi)
            valid_loss, n_valid_seen = 0.0, 0
            for xi, yi in self.batches(X_valid, y_valid):
                valid_loss += self.validation_step(xi, yi) * len(xi)
                n_valid_seen += len(xi)
            self.history.append({"epoch": epoch, "train_loss": (train_loss / n_train).item(),
                                 "valid_loss": (valid_loss / n_valid_seen).item()})
            print(self.history[-1])
        return self

    def fit(self, X, y):
        self.initialize()
        return self.fit_loop(X, y)
