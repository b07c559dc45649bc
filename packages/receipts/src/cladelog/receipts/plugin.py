"""Plugin hook implementations for cladelog-receipts (filled by its issue)."""
