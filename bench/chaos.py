"""`python -m bench.chaos`: the chaos run's command line; the scenario lives with the tests."""

from tests.support.chaos import main

if __name__ == "__main__":
    main()
