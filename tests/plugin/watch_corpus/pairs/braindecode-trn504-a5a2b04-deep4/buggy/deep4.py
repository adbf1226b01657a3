"""Deep ConvNet for EEG decoding (Schirrmeister et al. 2017), a smaller copy: temporal then spatial convolution,
conv-pool blocks, and a final layer that classifies the remaining time steps; built as one nn.Sequential."""
import torch
from torch import nn
from torch.nn import init
from torch.nn.functional import elu


class Expression(nn.Module):
    def __init__(self, expression_fn):
        super().__init__()
        self.expression_fn = expression_fn

    def forward(self, x):
        return self.expression_fn(x)


def ensure4d(x):
    while x.dim() < 4:
        x = x.unsqueeze(-1)
    return x


def transpose_time_to_spat(x):
    return x.permute(0, 3, 2, 1)


def squeeze_final_output(x):
    """(batch, classes, time, 1) -> (batch, classes, time), and -> (batch, classes) when one time step is left."""
    x = x.squeeze(3)
    return x.squeeze(2) if x.shape[2] == 1 else x


class Deep4Net(nn.Sequential):
    def __init__(self, n_chans, n_outputs, n_times, n_filters_time=8, n_filters_spat=8, filter_time_length=5,
                 pool_time_length=3, pool_time_stride=3, n_filters_2=16, filter_length_2=5, n_filters_3=16,
                 filter_length_3=5, drop_prob=0.5, batch_norm_alpha=0.1, add_log_softmax=True):
        super().__init__()
        self.n_chans, self.n_outputs, self.n_times = n_chans, n_outputs, n_times
        self.add_log_softmax = add_log_softmax
        self.add_module("ensuredims", Expression(ensure4d))
        self.add_module("dimshuffle", Expression(transpose_time_to_spat))
        self.add_module("conv_time", nn.Conv2d(1, n_filters_time, (filter_time_length, 1), stride=1))
        self.add_module("conv_spat", nn.Conv2d(n_filters_time, n_filters_spat, (1, n_chans), stride=1, bias=False))
        self.add_module("bnorm", nn.BatchNorm2d(n_filters_spat, momentum=batch_norm_alpha, affine=True, eps=1e-5))
        self.add_module("conv_nonlin", Expression(elu))
        self.add_module("pool", nn.MaxPool2d(kernel_size=(pool_time_length, 1), stride=(pool_time_stride, 1)))

        def add_conv_pool_block(n_filters_before, n_filters, filter_length, block_nr):
            suffix = "_{:d}".format(block_nr)
            self.add_module("drop" + suffix, nn.Dropout(p=drop_prob))
            self.add_module("conv" + suffix, nn.Conv2d(n_filters_before, n_filters, (filter_length, 1), bias=False))
            self.add_module("bnorm" + suffix, nn.BatchNorm2d(n_filters, momentum=batch_norm_alpha, affine=True,
                                                             eps=1e-5))
            self.add_module("nonlin" + suffix, Expression(elu))
            self.add_module("pool" + suffix, nn.MaxPool2d(kernel_size=(pool_time_length, 1),
                                                          stride=(pool_time_stride, 1)))

        add_conv_pool_block(n_filters_spat, n_filters_2, filter_length_2, 2)
        add_conv_pool_block(n_filters_2, n_filters_3, filter_length_3, 3)

        # the length the classifier covers: whatever time steps the blocks leave
        self.eval()
        with torch.no_grad():
            final_conv_length = self(torch.zeros(1, n_chans, n_times)).shape[2]

        # the classification layer and what follows it, as one final layer
        module = nn.Sequential()
        module.add_module("conv_classifier", nn.Conv2d(n_filters_3, n_outputs, (final_conv_length, 1), bias=True))
        if self.add_log_softmax:
            self.add_module("logsoftmax", nn.LogSoftmax(dim=1))
        module.add_module("squeeze", Expression(squeeze_final_output))
        self.add_module("final_layer", module)

        init.xavier_uniform_(self.conv_time.weight, gain=1)
        init.constant_(self.conv_time.bias, 0)
        init.xavier_uniform_(self.conv_spat.weight, gain=1)
        for name, param in self.named_parameters():
            if name.startswith("conv_") and name.endswith(".weight") and name[5:6].isdigit():
                init.xavier_uniform_(param, gain=1)
            elif "bnorm" in name:
                init.constant_(param, 1 if name.endswith("weight") else 0)
        init.xavier_uniform_(self.final_layer.conv_classifier.weight, gain=1)
        init.constant_(self.final_layer.conv_classifier.bias, 0)
