"""Build the multilingual benchmark corpora (evaluation/handbook.py) from the Debian package
`debian-handbook`: `--html` names its extracted html folder; without it the package is fetched
with `apt-get download` and unpacked with `dpkg -x` into a temporary folder."""

import subprocess
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.handbook import FOLDERS, build, build_mix, build_unaccented

PACKAGE_HTML = Path("usr/share/doc/debian-handbook/html")


class Command(BaseCommand):
    help = (
        "Write one BEIR folder per language from The Debian Administrator's Handbook, for "
        "kb_bench --beir."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--out", required=True, help="Folder to write <language>/ folders into."
        )
        parser.add_argument(
            "--html", help="The package's html folder (default: download and unpack the package)."
        )
        parser.add_argument("--languages", nargs="+", default=list(FOLDERS), choices=list(FOLDERS))
        parser.add_argument(
            "--mix",
            nargs="+",
            choices=list(FOLDERS),
            default=[],
            help="Also write mix-<languages>/: these languages in one corpus (two or more, "
            "among --languages).",
        )
        parser.add_argument(
            "--unaccented",
            nargs="+",
            choices=list(FOLDERS),
            default=[],
            help="Also write <language>-unaccented/: the same corpus, its questions typed "
            "without accents (among --languages).",
        )

    def handle(self, *args, out, html, languages, mix: list[str], unaccented: list[str], **options):
        if mix and (len(set(mix)) < 2 or not set(mix) <= set(languages)):
            raise CommandError("--mix takes two or more of the languages built (--languages).")
        if not set(unaccented) <= set(languages):
            raise CommandError("--unaccented takes languages among those built (--languages).")
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(html) if html else self._unpacked(Path(scratch))
            if not folder.is_dir():
                raise CommandError(f"No html folder at {folder}.")
            for built in build(folder, Path(out), languages):
                self.stdout.write(
                    f"{built.language}: {built.translated} of {built.pages} pages in the language, "
                    f"{built.queries} questions -> {Path(out) / built.language}"
                )
        if mix:
            self.stdout.write(
                f"{', '.join(mix)} together -> {build_mix(Path(out), list(dict.fromkeys(mix)))}"
            )
        for language in dict.fromkeys(unaccented):
            self.stdout.write(
                f"{language}, questions without accents -> {build_unaccented(Path(out), language)}"
            )

    def _unpacked(self, scratch: Path) -> Path:
        try:
            subprocess.run(
                ["apt-get", "download", "debian-handbook"],
                cwd=scratch,
                check=True,
                capture_output=True,
            )
            [deb] = scratch.glob("debian-handbook_*.deb")
            subprocess.run(
                ["dpkg", "-x", str(deb), str(scratch / "x")], check=True, capture_output=True
            )
        except (OSError, subprocess.CalledProcessError, ValueError) as error:
            raise CommandError(
                f"Could not fetch the debian-handbook package ({error}); pass --html."
            ) from error
        return scratch / "x" / PACKAGE_HTML
