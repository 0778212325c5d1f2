import sys

from mqwire.testing.cli import main

sys.exit(main())
