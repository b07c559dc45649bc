"""Plugin hook implementations for cladelog-fork-score (filled by its issue)."""
