"""Plugin hook implementations for cladelog-graph-engine (filled by its issue)."""
