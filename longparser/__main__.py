from longparser.cli import main

raise SystemExit(main())
