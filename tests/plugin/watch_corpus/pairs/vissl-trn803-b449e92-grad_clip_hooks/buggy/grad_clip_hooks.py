"""A training hook that clips the gradient norm after each backward pass."""
import torch.nn.utils as utils


class ClassyHook:
    def on_start(self, task):
        pass

    def on_backward(self, task):
        pass


class GradClipHook(ClassyHook):
    def __init__(self, norm_type, max_norm):
        super().__init__()
        self.norm_type = norm_type
        self.max_norm = max_norm

    def on_backward(self, task):
        utils.clip_grad_norm_(task.model.parameters(), max_norm=self.max_norm, norm_type=self.norm_type)  # BUG TRN803
