"""Stage 1, evidence: bytes of a log become evidence records (pattern packs, the scanner), and evidence, the exit
status and the scheduler's facts become a verdict (``classify``). Pure: nothing here starts a process."""
