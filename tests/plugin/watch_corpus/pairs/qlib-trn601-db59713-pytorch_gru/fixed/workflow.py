import numpy as np

from pytorch_gru import GRU

rng = np.random.default_rng(0)
x = rng.normal(size=(40, 6 * 5)).astype(np.float32)  # 6 features over 5 days, flattened as the loader gives them
y = (x[:, ::6].mean(1) + 0.1 * rng.normal(size=40)).astype(np.float32)
GRU().fit(x[:32], y[:32], x[32:], y[32:])
