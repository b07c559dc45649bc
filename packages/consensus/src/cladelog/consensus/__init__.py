"""cladelog.consensus: independent validators, stake, signed votes, >2/3 finality.
"""
