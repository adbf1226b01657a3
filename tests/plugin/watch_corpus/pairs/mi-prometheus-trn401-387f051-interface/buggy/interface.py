"""The interface between a Neural Turing Machine's controller and its memory: read heads' addressing."""
import torch
import torch.nn.functional as F


class Interface(torch.nn.Module):
    def __init__(self, num_read_heads, ctrl_hidden_state_size, num_memory_content_bits, shift_size=3):
        super().__init__()
        self.interface_num_read_heads = num_read_heads
        self.ctrl_hidden_state_size = ctrl_hidden_state_size
        # key, beta, gate, shift, gamma: where each parameter sits in a head's output
        self.read_param_locations = self.calculate_param_locations(num_memory_content_bits, shift_size)
        num_read_params = self.read_param_locations[-1]
        # Forward linear layers that generate parameters of read heads.
        self.hidden2read_list = []  # BUG TRN401
        for _ in range(self.interface_num_read_heads):
            self.hidden2read_list.append(torch.nn.Linear(self.ctrl_hidden_state_size, num_read_params))

    @staticmethod
    def calculate_param_locations(content_bits, shift_size):
        sizes = [content_bits, 1, 1, shift_size, 1]
        locations = [0]
        for size in sizes:
            locations.append(locations[-1] + size)
        return locations

    def update_attention(self, query, beta, gate, shift, gamma, memory, prev_attention):
        similarity = F.cosine_similarity(query[:, None, :], memory, dim=-1)
        content = F.softmax(F.softplus(beta) * similarity, dim=-1)
        g = torch.sigmoid(gate)
        attention = g * content + (1 - g) * prev_attention
        s = F.softmax(shift, dim=-1)
        shifted = sum(s[:, i:i + 1] * attention.roll(i - 1, dims=-1) for i in range(s.shape[-1]))
        sharpened = shifted ** (1 + F.softplus(gamma))
        return sharpened / sharpened.sum(-1, keepdim=True)

    def forward(self, ctrl_hidden_state, prev_memory, prev_read_attentions):
        read_vectors, read_attentions = [], []
        for i in range(self.interface_num_read_heads):
            params = self.hidden2read_list[i](ctrl_hidden_state)
            loc = self.read_param_locations
            query, beta, gate, shift, gamma = (params[:, loc[j]:loc[j + 1]] for j in range(5))
            attention = self.update_attention(query, beta, gate, shift, gamma, prev_memory, prev_read_attentions[i])
            read_attentions.append(attention)
            read_vectors.append((attention[..., None] * prev_memory).sum(1))
        return read_vectors, read_attentions
