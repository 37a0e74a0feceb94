"""Grounded answers: a question answered by the deployment's own model from the knowledge base's
passages, with an honesty gate before the model and every citation checked after it
(docs/answers.md).

Interfaces other apps and helpers build on:
- `answers.service.answer_events(request_or_principal, namespaces, question, *, stream,
  caller="api")`:
  the question and the caller's rights are checked when it is called (refusals raise); it returns
  the
  iterator of events `gate`, `sources`, `delta` (a sentence at a time), `answer`, `done`, or `error`
  {code, message} then `done`. While answers are on, the iterator holds one of the process's
  KB_ANSWER_CONCURRENCY slots until it ends or is closed (`close()`), so read it out or close it.
  `answers.service.final_state(events)`: the non-streamed JSON. `model_status()`: /healthz's line.
- `answers.citations.check(answer_text, sources, *, share=SUPPORTED_SHARE) -> Checked` (pure;
  `Checked.sentences`,
  `.counts`, `.text`; `share` is the benchmark's, to choose the threshold).
- `answers.gate.decide(result, *, floor=None, rules=RULES, words_share=WORDS_SHARE) -> Gate(answer,
  rule,
  reason)`: `floor` is the strong cosine (`kb.embedding.embedders.strong_cosine()`); without it
  only the
  strong match opens the gate; `rules` leaves a rule out, `words_share=None` the words check (the
  benchmark).
  `decide_all(results, floor=...)`: one gate over several namespaces' searches.
- `answers.prompt`: the prompt, its budget (`build`, raising PromptTooLarge) and the read window.
- `Namespace.answers` (bool, default on): the curator's switch per namespace.
"""
