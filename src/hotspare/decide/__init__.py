"""Stage 2, decision: pure functions from a verdict, the pool and the budgets spent to a frozen decision
(``policy.decide``), and from an attempt's observations to a judgement (``judge``). No I/O."""
