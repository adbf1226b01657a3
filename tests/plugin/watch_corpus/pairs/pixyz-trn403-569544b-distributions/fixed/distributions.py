"""Probability distributions as modules: forward() maps the conditioning variables to the parameters of a
torch.distributions class; sampling and log-densities go through get_params()."""
import torch
from torch import nn


class Distribution(nn.Module):
    params_keys = ()
    distribution_torch_class = None

    def __init__(self, var, cond_var=(), name="p", **constants):
        super().__init__()
        self.var, self.cond_var, self.name = list(var), list(cond_var), name
        for key, value in constants.items():  # fixed parameters (a prior's): kept as buffers
            self.register_buffer(key, torch.as_tensor(value, dtype=torch.float32))

    def forward(self, **inputs):
        return {}  # a distribution without conditioning variables: all its parameters are constants

    def get_params(self, x_dict):
        inputs = {k: x_dict[k] for k in self.cond_var}
        output_dict = self(**inputs)
        output_dict.update({k: v for k, v in self.named_buffers() if k in self.params_keys})
        return output_dict

    def dist(self, x_dict={}):
        return self.distribution_torch_class(**self.get_params(x_dict))

    def sample(self, x_dict={}, reparam=True):
        d = self.dist(x_dict)
        value = d.rsample() if reparam and d.has_rsample else d.sample()
        return {**x_dict, self.var[0]: value}

    def log_prob(self, x_dict):
        return self.dist(x_dict).log_prob(x_dict[self.var[0]]).sum(-1)


class Normal(Distribution):
    params_keys = ("loc", "scale")
    distribution_torch_class = torch.distributions.Normal


class Bernoulli(Distribution):
    params_keys = ("probs",)
    distribution_torch_class = torch.distributions.Bernoulli


def kl_divergence(p, q, x_dict):
    """KL(p || q), summed over the features, for each sample of the batch."""
    return torch.distributions.kl_divergence(p.dist(x_dict), q.dist(x_dict)).sum(-1)
