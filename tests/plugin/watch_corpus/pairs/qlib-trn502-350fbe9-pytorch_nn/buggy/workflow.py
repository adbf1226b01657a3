"""Fit the DNN on raw (unnormalised) daily features to predict whether the next return is positive."""
import numpy as np

from pytorch_nn import DNNModelPytorch

rng = np.random.default_rng(0)
n, d = 64, 6
prices = rng.uniform(10, 200, (n, 1))
volumes = rng.uniform(1e5, 1e6, (n, 1))
features = np.hstack([prices, volumes, rng.normal(size=(n, d - 2))])
labels = (rng.normal(size=(n, 1)) > 0).astype(np.float32)
weights = np.ones((n, 1), dtype=np.float32)
model = DNNModelPytorch(input_dim=d, loss="binary").fit(features, labels, weights)
print("fitted", model.max_steps, "steps")
