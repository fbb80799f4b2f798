from gdpo.cli import main
import sys
sys.exit(main())
