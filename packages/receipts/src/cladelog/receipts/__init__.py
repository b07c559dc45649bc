"""cladelog.receipts plugin."""

__all__: list[str] = []
