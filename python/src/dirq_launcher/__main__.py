"""``python -m dirq_launcher``: the same as the ``dirq`` console script."""

from dirq_launcher.launcher import main

main()
