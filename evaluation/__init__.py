"""Measuring the product: eval suites and runs, `kb_bench`, `kb_site_bench`, the fusion fit.

It sits above every other app and reaches them only through their public modules and their
explicit evaluation entry points (`retrieval.evaluate`, `ingest.evaluate`); no app imports it
back (only the wiring mounts its API router, its page and its admin).
"""
