import sys

from brokers.cli import main

sys.exit(main())
