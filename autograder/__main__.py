"""`python -m autograder` runs the hooklab command line."""

import sys

from autograder.cli import main

sys.exit(main())
