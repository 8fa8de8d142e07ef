"""``python -m hotspare`` runs the CLI."""

from hotspare.cli import main

raise SystemExit(main())
