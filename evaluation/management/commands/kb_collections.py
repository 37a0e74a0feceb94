"""Build every benchmark collection the team keeps as BEIR folders for `kb_bench --beir`
(evaluation/collections.py): the translated Debian documentation collections and The Debian
Administrator's Handbook's languages. The Debian packages are read unpacked from `--packages`
(one `dpkg -x` root per package, named for it); a package missing there is fetched with
`apt-get download` and unpacked into it."""

import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.collections import (
    COLLECTIONS,
    HANDBOOK,
    CollectionError,
    build,
    build_handbook,
    unpack,
)
from evaluation.handbook import FOLDERS


class Command(BaseCommand):
    help = "Write one BEIR folder per collection and per handbook language, for kb_bench --beir."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        build_parser = sub.add_parser("build", help="Write the collections' BEIR folders.")
        build_parser.add_argument(
            "--out", required=True, help="Folder to write <collection>/ folders into."
        )
        build_parser.add_argument(
            "--packages",
            help="Folder of unpacked packages, <package>/ each (dpkg -x); missing ones are "
            "downloaded into it (default: a temporary folder).",
        )
        build_parser.add_argument(
            "--only",
            nargs="+",
            choices=[*COLLECTIONS, HANDBOOK],
            metavar="NAME",
            help=f"Build only these ({', '.join([*COLLECTIONS, HANDBOOK])}).",
        )
        build_parser.add_argument(
            "--languages",
            nargs="+",
            choices=list(FOLDERS),
            default=list(FOLDERS),
            help="The handbook's languages to build (default: all).",
        )
        sub.add_parser("list", help="Name each collection, its language, package and version.")

    def handle(self, *args, action, **options):
        if action == "list":
            for c in COLLECTIONS.values():
                self.stdout.write(f"{c.name}: {c.language}, {c.package} {c.version}, {c.what}")
            self.stdout.write(
                f"{HANDBOOK}: {', '.join(FOLDERS)}, The Debian Administrator's Handbook "
                f"(kb_handbook_corpus)"
            )
            return
        names = options["only"] or [*COLLECTIONS, HANDBOOK]
        out = Path(options["out"])
        with tempfile.TemporaryDirectory() as scratch:
            packages = Path(options["packages"]) if options["packages"] else Path(scratch)
            try:
                for name in dict.fromkeys(names):
                    if name == HANDBOOK:
                        built = build_handbook(
                            unpack(HANDBOOK, packages), out, options["languages"]
                        )
                    else:
                        built = [
                            build(
                                COLLECTIONS[name], unpack(COLLECTIONS[name].package, packages), out
                            )
                        ]
                    for b in built:
                        self.stdout.write(
                            f"{b.name}: {b.language}, {b.documents} documents, {b.queries} "
                            "questions "
                            f"-> {b.folder}"
                        )
            except CollectionError as error:
                raise CommandError(str(error)) from error
