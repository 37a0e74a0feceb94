"""Turn GNOME help (Mallard .page files) of one language into BEIR corpus rows, one per section."""

import json
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

NS = {"m": "http://projectmallard.org/1.0/"}
M = "{http://projectmallard.org/1.0/}"
SKIP = {M + "info", M + "links", "{http://www.w3.org/2001/XInclude}include"}


def text_of(el):
    out = []

    def walk(e):
        if e.tag in SKIP or e.tag == M + "section" or e.tag == M + "title" and e is not el:
            if e.tail and e.tag not in (M + "section",):
                out.append(e.tail)
            return
        if e.text:
            out.append(e.text)
        for c in e:
            walk(c)
        if e.tail and e is not el:
            out.append(e.tail)
        if e.tag in (M + "p", M + "item", M + "td", M + "code", M + "screen"):
            out.append("\n")

    for c in el:
        if c.tag in SKIP or c.tag == M + "section" or c.tag == M + "title":
            continue
        walk(c)
    t = "".join(out)
    t = re.sub(r"[ \t]+", " ", t)
    t = re.sub(r"\s*\n\s*", "\n", t).strip()
    return t


def title(el):
    t = el.find("m:title", NS)
    return re.sub(r"\s+", " ", "".join(t.itertext())).strip() if t is not None else ""


def rows(path):
    root = ET.parse(path).getroot()
    pid = root.get("id")
    if root.get("type") == "guide":
        return []
    ptitle = title(root)
    desc = root.find("m:info/m:desc", NS)
    desc = re.sub(r"\s+", " ", "".join(desc.itertext())).strip() if desc is not None else ""
    out = []
    body = text_of(root)
    if desc:
        body = (desc + "\n" + body).strip()
    if len(body) > 40:
        out.append({"_id": pid, "title": ptitle, "text": body})

    def secs(el, prefix):
        for s in el.findall("m:section", NS):
            sid = s.get("id") or str(len(out))
            st = title(s)
            t = text_of(s)
            if len(t) > 40:
                out.append(
                    {
                        "_id": f"{pid}#{sid}",
                        "title": f"{ptitle} — {st}" if st else ptitle,
                        "text": t,
                    }
                )
            secs(s, prefix)

    secs(root, pid)
    return out


if __name__ == "__main__":
    d = pathlib.Path(sys.argv[1])
    allrows = []
    for p in sorted(d.glob("*.page")):
        try:
            allrows += rows(p)
        except ET.ParseError as e:
            print("skip", p, e, file=sys.stderr)
    for r in allrows:
        print(json.dumps(r, ensure_ascii=False))
