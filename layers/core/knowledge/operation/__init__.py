"""Operation: the jobs an operator runs on a deployed stack: backfill, redrive, the tenant purge."""
