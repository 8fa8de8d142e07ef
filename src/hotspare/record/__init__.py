"""Stage 4, record: the ledger (one writer per file), the quarantine and its published snapshot, a workflow's jobs
and retries, the postmortem report, and the file helpers they share (atomic writes, tails, SQLite)."""
