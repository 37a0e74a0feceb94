"""Grounded answers: the deployment's model answers from the knowledge base (docs/answers.md).

Traps for callers: `answers.service.answer_events` checks the question and the caller's rights when
called (refusals raise), and while answers are on its iterator holds one of the process's
KB_ANSWER_CONCURRENCY slots until it ends, so read it out or `close()` it. `answers.gate.decide`
without a `floor` (`kb.embedding.embedders.strong_cosine()`) opens only on the strong match; its
`rules` and `words_share` arguments, like `citations.check`'s `share`, are the benchmark's.
`Namespace.answers` is the curator's switch per namespace.
"""
