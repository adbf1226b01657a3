"""One module per rule: ``trnNNN_<pattern-name>.py``, each defining one Rule subclass."""
