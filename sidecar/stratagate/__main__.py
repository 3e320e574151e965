from stratagate.cli import main

raise SystemExit(main())
