"""Parameter groups for the transformer models: no weight decay on biases and norms, a smaller learning
rate for the pretrained encoder when fine-tuning."""


def get_bert_configured_parameters(module, lr=None):
    param_optimizer = list(module.named_parameters())
    no_decay = ["bias", "LayerNorm.bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in param_optimizer if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in param_optimizer if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    if lr is not None:
        for p in optimizer_grouped_parameters:
            p["lr"] = lr
    return optimizer_grouped_parameters


def get_optimizer_parameters_for_bert(module, config):
    # Pretraining has same LR for all of the parts
    if module.config["training_head_type"] == "pretraining":
        return get_bert_configured_parameters(module)

    lr = config["optimizer"]["params"]["lr"]
    finetune_lr_multiplier = config["model_config"].get("finetune_lr_multiplier", 1)
    if finetune_lr_multiplier == 1:
        return get_bert_configured_parameters(module)

    # Every module but the classifier (the encoder, the pooler, ...) with the fine-tuning learning rate
    parameters = []
    for name, submodule in module.named_children():
        if name == "classifier":
            continue
        parameters += get_bert_configured_parameters(submodule, lr * finetune_lr_multiplier)
    # Classifier will be trained on the normal lr
    parameters += get_bert_configured_parameters(module.classifier)
    return parameters
