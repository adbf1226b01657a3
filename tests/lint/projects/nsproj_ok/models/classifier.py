from models.base import Head


class Classifier(Head):
    def __init__(self) -> None:
        super().__init__(32, 4)
