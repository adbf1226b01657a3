# realbug-expected: TRN105 shape=spelling case=randomcnn-voice-transfer-trn105-afe268a-train
import torch
from torch.autograd import Variable


def make_canvas(shape, use_cuda):
    canvas = Variable(torch.randn(shape) * 1e-3, requires_grad=True)
    if use_cuda:
        canvas = canvas.cuda()
    return canvas, torch.optim.Adam([canvas])
