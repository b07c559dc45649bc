"""Plugin hook implementations for cladelog-lawv (filled by its issue)."""
