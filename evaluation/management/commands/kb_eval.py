"""python manage.py kb_eval FILE [--namespace NS] [--json] [--junit PATH]

Exit status 0 only when every case passes; 1 when a case fails (an answer case whose answer
failed too: its error names the answer's code); 2 when the file is unusable."""

import json as jsonlib
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from evaluation.errors import EvalFileError
from evaluation.fitting import fit_namespace, suite_judgements
from evaluation.runner import METHODS, junit_xml, run_suite
from evaluation.suites import read_suite


class Command(BaseCommand):
    help = "Run a retrieval eval suite against the search service."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--namespace", help="Search this namespace instead of the file's")
        parser.add_argument("--json", action="store_true", help="Print the result as JSON")
        parser.add_argument("--junit", help="Also write JUnit XML to this path")
        parser.add_argument(
            "--fit",
            action="store_true",
            help="Fit the namespace's fusion weight to the cases' `relevant` documents "
            "(5-fold cross-validated), store it, then run the suite",
        )
        parser.add_argument(
            "--method",
            choices=sorted(METHODS),
            default="ranker",
            help="Search with one channel alone or plain RRF instead of the full ranker",
        )

    def handle(self, *args, file, namespace, json: bool, junit, method: str, fit: bool, **options):
        try:
            suite = read_suite(Path(file).read_text(encoding="utf-8"), file, namespace=namespace)
        except (EvalFileError, OSError) as exc:
            self.stderr.write(f"kb_eval: {getattr(exc, 'message', exc)}")
            sys.exit(2)
        if fit:
            try:
                self.fit(suite, Path(file).name)
            except EvalFileError as exc:
                self.stderr.write(f"kb_eval: {exc.message}")
                sys.exit(2)
        result = run_suite(suite, method=method)
        if junit:
            Path(junit).write_text(junit_xml(result, Path(file).stem), encoding="utf-8")
        if json:
            self.stdout.write(jsonlib.dumps(result.as_dict(), indent=2))
        else:
            for case in result.cases:
                mark = "PASS" if case.passed else ("ERROR" if case.error else "FAIL")
                self.stdout.write(f"{mark:<5} {case.id}")
                if case.error:
                    self.stdout.write(f"      {case.error}")
                for check in case.checks:
                    self.stdout.write(
                        f"      {'ok ' if check.passed else 'bad'} {check.name}: {check.detail}"
                    )
                if case.answer is not None:
                    self.stdout.write(
                        f"      answer #{case.answer['answer_id']} "
                        f"(gate: {case.answer['rule'] or '-'}): "
                        f"{case.answer['text'][:200]!r}"
                    )
                if case.recall is not None:
                    self.stdout.write(f"      recall@k {case.recall:.2f}, MRR {case.mrr:.2f}")
            self.stdout.write(f"{result.passed} passed, {result.failed} failed")
        if result.failed:
            sys.exit(1)

    def fit(self, suite, name: str) -> None:
        namespace, questions, judgements = suite_judgements(suite)
        calibration = fit_namespace(
            namespace, questions, judgements, fitted_on=f"eval suite {name}"
        )
        record = calibration.record
        self.stdout.write(
            f"fitted {namespace}: lexical weight {record.lexical_weight} (v{record.version}) on "
            f"{record.queries} judged cases; nDCG@10 {record.cross_validated_ndcg:.3f} "
            f"cross-validated, {record.default_ndcg:.3f} with the default"
        )
