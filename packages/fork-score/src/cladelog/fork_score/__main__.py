"""``python -m cladelog.fork_score``: the fork-score commands without a deployment file."""

from cladelog.fork_score.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
