from .probs import predict_proba

__all__ = ["predict_proba"]
