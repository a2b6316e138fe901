import sys

from verl_patches.cli import main

sys.exit(main())
