"""A Darknet built from a cfg description: convolutions, route (skip) layers and a detection head."""
import torch
from torch import nn

CFG = """
[net]
channels=3
[convolutional]
filters=8
size=3
[convolutional]
filters=8
size=3
[route]
layers=-1,-2
[convolutional]
filters=6
size=1
[yolo]
"""


def parse_cfg(text):
    blocks, block = [], {}
    for line in (l.strip() for l in text.splitlines()):
        if not line:
            continue
        if line.startswith("["):
            if block:
                blocks.append(block)
            block = {"type": line[1:-1]}
        else:
            key, value = line.split("=")
            block[key] = value
    blocks.append(block)
    return blocks


def create_modules(blocks):
    net_info = blocks[0]
    module_list = nn.ModuleList()
    prev_filters, output_filters = int(net_info["channels"]), []
    for index, x in enumerate(blocks[1:]):
        module = nn.Sequential()
        if x["type"] == "convolutional":
            filters, size = int(x["filters"]), int(x["size"])
            module.add_module(f"conv_{index}", nn.Conv2d(prev_filters, filters, size, padding=size // 2))
            module.add_module(f"leaky_{index}", nn.LeakyReLU(0.1))
        elif x["type"] == "route":
            filters = sum(output_filters[index + int(i)] for i in x["layers"].split(","))
        module_list.append(module)
        prev_filters = filters
        output_filters.append(filters)
    return net_info, module_list


class Darknet(nn.Module):
    def __init__(self, cfg=CFG):
        super().__init__()
        self.blocks = parse_cfg(cfg)
        self.net_info, self.module_list = create_modules(self.blocks)
        self.objectness_bias = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        outputs = {}
        for i, block in enumerate(self.blocks[1:]):
            if block["type"] == "convolutional":
                x = self.module_list[i](x)
            elif block["type"] == "route":
                x = torch.cat([outputs[i + int(j)] for j in block["layers"].split(",")], 1)
            elif block["type"] == "yolo":
                x = torch.cat([x[:, :5], x[:, 5:] + self.objectness_bias], 1)
            outputs[i] = x
        return x
