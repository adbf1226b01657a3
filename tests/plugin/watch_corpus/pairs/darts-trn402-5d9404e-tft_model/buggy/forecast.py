import torch

from tft_model import TFTModel

torch.manual_seed(0)
series = torch.linspace(0, 1, 20) + 0.05 * torch.randn(20)
calendar = torch.sin(torch.arange(22) * 0.7)  # a covariate known into the future (two steps past the series)
model = TFTModel(input_chunk_length=4, output_chunk_length=2, batch_size=4)
model.fit(series, future_covariates=calendar)

# move the trained model elsewhere; on CPU a cast stands in for the original's move to another device
inner = model.model
inner.to(torch.float64)  # BUG TRN402
predictions = model.predict(n=2, series=[series] * inner.batch_size_last, future_covariates=calendar)
print("forecast", predictions.shape, predictions.dtype)
