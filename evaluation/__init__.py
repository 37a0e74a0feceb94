"""Measuring the product: eval suites and runs, `kb_bench`, `kb_site_bench`, the fusion fit, and
the research commands.

It sits above every other app: the lab, the one place that reads the other apps' internals
(the parts of search it varies and times are named in `evaluation.search_parts`). No app imports
it back (only the wiring mounts its API router, its page and its admin).
"""
