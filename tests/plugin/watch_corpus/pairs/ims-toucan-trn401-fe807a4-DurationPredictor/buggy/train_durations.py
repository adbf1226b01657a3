import torch

from DurationPredictor import DurationPredictor, DurationPredictorLoss

torch.manual_seed(0)
encoder_states = torch.randn(12, 7, 8)
durations = torch.randint(1, 6, (12, 7))
predictor, criterion = DurationPredictor(idim=8), DurationPredictorLoss()
optimizer = torch.optim.Adam(predictor.parameters(), lr=1e-3)
for epoch in range(2):
    predictor.train()
    for i in range(0, 12, 4):
        loss = criterion(predictor(encoder_states[i:i + 4]), durations[i:i + 4])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    predictor.eval()
    with torch.no_grad():
        print(f"epoch {epoch}: loss {float(criterion(predictor(encoder_states), durations)):.3f}")
