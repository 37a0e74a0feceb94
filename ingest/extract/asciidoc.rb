# AsciiDoc on stdin, JSON on stdout: {"title", "html", "sections": [[id, level, line], ...]}.
# Run by ingest/extract/asciidoc.py inside the parser child's sandbox. Asciidoctor's secure mode
# (no include, no file or URI read); the attributes below are locked, so a document cannot turn
# on what reads files or the network (data-uri, allow-uri-read, docinfo) or runs a program (a
# source highlighter such as pygments), nor add a table of contents to the text (`toc`: the
# site's navigation, not the document's). `sourcemap` gives each section its heading's line.
require 'json'
require 'asciidoctor'

LOCKED = {
  'allow-uri-read' => nil, 'data-uri' => nil, 'docinfo' => nil, 'source-highlighter' => nil,
  'kroki-fetch-diagram' => nil, 'toc' => nil, 'linkcss' => '', 'showtitle' => '', 'max-include-depth' => '0',
  'skip-front-matter' => '',
}.freeze

source = $stdin.read.force_encoding(Encoding::UTF_8).scrub
document = Asciidoctor.load(source, safe: :secure, sourcemap: true, standalone: false, attributes: LOCKED)
html = document.convert
sections = document.find_by(context: :section).select(&:id).map { |section| [section.id, section.level, section.lineno] }
title = document.doctitle(sanitize: true) || ''
$stdout.write(JSON.generate({ 'title' => title, 'html' => html, 'sections' => sections }))
