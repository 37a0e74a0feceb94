"""python -m kb.conf [--write]: print the settings tables of docs/configuration.md, or write them
there."""

import sys

from kb.conf import TABLE, configuration_tables
from kb.settings_table import write_markdown

if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        print(f"wrote {write_markdown(TABLE)} settings into docs/configuration.md")
    else:
        sys.stdout.write(configuration_tables())
