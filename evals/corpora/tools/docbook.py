"""Turn Debian Reference DocBook HTML chapters into BEIR corpus rows, one per section (own text
only)."""

import copy
import json
import re
import sys

import lxml.html

for path in sys.argv[1:]:
    t = lxml.html.parse(path)
    for s in t.xpath('//div[@class="section"]'):
        h = s.xpath('./div[@class="titlepage"]//*[self::h2 or self::h3 or self::h4 or self::h5]')
        if not h:
            continue
        a = h[0].xpath(".//a[@id]")
        sid = a[0].get("id") if a else None
        if not sid:
            continue
        title = re.sub(r"\s+", " ", h[0].text_content()).strip()
        c = copy.deepcopy(s)
        for sub in c.xpath('./div[@class="section"]'):
            sub.getparent().remove(sub)
        for tp in c.xpath('./div[@class="titlepage"]'):
            tp.getparent().remove(tp)
        for br in c.xpath(".//p|.//li|.//tr|.//pre|.//dt|.//dd"):
            br.tail = "\n" + (br.tail or "")
        text = c.text_content()
        text = re.sub(r"[ \t]+", " ", text)
        text = re.sub(r"\s*\n\s*", "\n", text).strip()
        if len(text) < 40:
            continue
        print(json.dumps({"_id": sid, "title": title, "text": text}, ensure_ascii=False))
