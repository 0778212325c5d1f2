import sys

from mqwire.cli import main

sys.exit(main())
