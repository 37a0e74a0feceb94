// The search page's answer: asked of POST /api/answer as server-sent events once the results are shown,
// and drawn above them. The model's text is untrusted: it is only ever set as textContent, and a
// citation becomes a link only to a source URL the server sent. Served from 'self' (the CSP holds).
(function () {
  "use strict";
  var box = document.querySelector("section.answer[data-url]");
  if (!box || !window.fetch || !window.TextDecoder) { return; }
  var status = box.querySelector(".answer-status");
  var sources = {};  // n -> {n, title, url}
  var answerId = null;
  var finished = false;
  var deltas = 0;  // pieces of text streamed so far
  var MARKER = /\[\s*(?:sources?\s*)?(\d{1,3}(?:\s*[,;]\s*(?:sources?\s*)?\d{1,3})*)\s*\]/gi;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function say(text, className) {
    status.textContent = text;
    status.className = "answer-status" + (className ? " " + className : "");
  }

  function sourceLink(n) {
    var source = sources[n];
    if (!source || !source.url) { return el("span", "cite missing", "[" + n + "]"); }
    var link = el("a", "cite", "[" + n + "]");
    link.href = source.url;
    link.title = source.title || "";
    link.setAttribute("data-source", String(n));
    return link;
  }

  // a sentence as text nodes, with each [n] a link to the passage of source n
  function sentenceNodes(text, into) {
    var last = 0;
    text.replace(MARKER, function (match, numbers, offset) {
      into.appendChild(document.createTextNode(text.slice(last, offset)));
      var list = numbers.match(/\d+/g) || [];
      for (var i = 0; i < list.length; i++) { into.appendChild(sourceLink(Number(list[i]))); }
      last = offset + match.length;
      return match;
    });
    into.appendChild(document.createTextNode(text.slice(last)));
  }

  function streamed() {
    var p = box.querySelector(".answer-stream");
    if (!p) {
      p = el("p", "answer-stream");
      p.setAttribute("dir", "auto");
      box.insertBefore(p, status.nextSibling);
    }
    return p;
  }

  function showSources(list, heading) {
    var old = box.querySelector(".answer-sources");
    if (old) { old.parentNode.removeChild(old); }
    if (!list.length) { return; }
    var wrap = el("div", "answer-sources");
    wrap.appendChild(el("h3", "", heading));
    var ol = el("ol");
    for (var i = 0; i < list.length; i++) {
      var li = el("li");
      li.value = list[i].n;
      var link = el("a", "", list[i].title || list[i].url);
      link.href = list[i].url;
      link.setAttribute("dir", "auto");
      li.appendChild(link);
      ol.appendChild(li);
    }
    wrap.appendChild(ol);
    box.appendChild(wrap);
  }

  function showAnswer(event) {
    finished = true;
    var stream = box.querySelector(".answer-stream");
    if (stream) { stream.parentNode.removeChild(stream); }
    var list = [];
    for (var key in sources) { if (Object.prototype.hasOwnProperty.call(sources, key)) { list.push(sources[key]); } }
    if (event.abstained) {
      say("The knowledge base does not cover this question.", "not-covered");
      showSources(list, "Closest passages");
      return;
    }
    var text = el("p", "answer-text");
    text.setAttribute("dir", "auto");
    var sentences = event.sentences || [];
    for (var i = 0; i < sentences.length; i++) {
      var s = sentences[i];
      if (s.verdict === "dropped") { continue; }
      var span = el("span", "sentence " + s.verdict);
      sentenceNodes(s.text, span);
      if (s.verdict === "unsupported") {
        var flag = el("span", "flag", "not supported by its source");
        span.title = s.reason || "";
        span.appendChild(document.createTextNode(" "));
        span.appendChild(flag);
      }
      text.appendChild(span);
      text.appendChild(document.createTextNode(" "));
    }
    var c = event.counts || {};
    if (!text.childNodes.length) {
      // every sentence was dropped: nothing it said can be checked against a source, so nothing is shown
      say("The model's answer cited none of the sources, so it is not shown. The search results below stand.",
          "all-dropped");
    } else {
      say("");
      status.hidden = true;
    }
    box.insertBefore(text, status.nextSibling);
    var counts = el("p", "answer-counts", (c.sentences || 0) + " sentence" + (c.sentences === 1 ? "" : "s") + ": " +
                    (c.supported || 0) + " supported by their sources, " + (c.unsupported || 0) + " unsupported (marked), " +
                    (c.dropped || 0) + " dropped (cited nothing checkable).");
    box.insertBefore(counts, text.nextSibling);
    showSources(list, "Sources");
  }

  function showError(code, message) {
    finished = true;
    var stream = box.querySelector(".answer-stream");
    if (stream) { stream.parentNode.removeChild(stream); }
    status.hidden = false;
    say("", "answer-error");
    status.appendChild(document.createTextNode("No answer: " + (message || "the answer model failed.") + " "));
    if (code) { status.appendChild(el("span", "error-code", "(" + code + ")")); }
    status.appendChild(document.createTextNode(" The search results below are not affected."));
  }

  function feedback() {
    if (answerId === null || box.querySelector(".answer-feedback")) { return; }
    var form = el("div", "answer-feedback");
    form.setAttribute("role", "group");
    form.setAttribute("aria-label", "Was this answer helpful?");
    var up = el("button", "vote up", "\u2713 Helpful");
    var down = el("button", "vote down", "\u2717 Not helpful");
    up.type = down.type = "button";
    function vote(helpful) {
      up.disabled = down.disabled = true;
      fetch(box.getAttribute("data-url") + "/feedback", {
        method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-CSRFToken": box.getAttribute("data-csrf") || ""},
        body: JSON.stringify({answer_id: answerId, helpful: helpful})
      }).then(function (response) {
        var note = el("span", "thanks", response.ok ? "Thank you: your vote helps the curators." : "Your vote was not saved.");
        note.setAttribute("role", "status");
        form.appendChild(note);
        if (!response.ok) { up.disabled = down.disabled = false; }
      }).catch(function () { up.disabled = down.disabled = false; });
    }
    up.addEventListener("click", function () { vote(true); });
    down.addEventListener("click", function () { vote(false); });
    form.appendChild(up);
    form.appendChild(down);
    box.appendChild(form);
  }

  function handle(name, data) {
    if (name === "gate") {
      say(data.answer ? "Writing an answer from the passages below…" : "Checking the closest passages…");
    } else if (name === "sources") {
      sources = {};
      for (var i = 0; i < (data.sources || []).length; i++) { sources[data.sources[i].n] = data.sources[i]; }
    } else if (name === "delta") {
      streamed().textContent += data.text || "";
      deltas += 1;
      box.setAttribute("data-deltas", String(deltas));
    } else if (name === "answer") {
      showAnswer(data);
    } else if (name === "error") {
      showError(data.code, data.message);
    } else if (name === "done") {
      answerId = data.answer_id === undefined ? null : data.answer_id;
      box.setAttribute("data-answer-id", answerId === null ? "" : String(answerId));
      if (!box.querySelector(".answer-error") && finished) { feedback(); }
      box.setAttribute("data-state", "done");
    }
  }

  // one server-sent event block: "event: name" and "data: json" lines
  function parse(block) {
    var name = "message", data = "";
    var lines = block.split("\n");
    for (var i = 0; i < lines.length; i++) {
      if (lines[i].indexOf("event:") === 0) { name = lines[i].slice(6).trim(); }
      else if (lines[i].indexOf("data:") === 0) { data += lines[i].slice(5).trim(); }
    }
    if (!data) { return; }
    try { handle(name, JSON.parse(data)); } catch (error) { showError("", "the answer stream could not be read."); }
  }

  fetch(box.getAttribute("data-url"), {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "Accept": "text/event-stream",
              "X-CSRFToken": box.getAttribute("data-csrf") || ""},
    body: JSON.stringify({q: box.getAttribute("data-q"), namespaces: [box.getAttribute("data-namespace")], stream: true})
  }).then(function (response) {
    var type = response.headers.get("Content-Type") || "";
    if (!response.ok || type.indexOf("text/event-stream") !== 0) {
      return response.json().then(function (body) { showError(body.code, body.message); },
                                  function () { showError("", "the server answered " + response.status + "."); })
        .then(function () { box.setAttribute("data-state", "done"); });
    }
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function read() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          if (buffer.trim()) { parse(buffer); }
          if (!finished) { showError("", "the answer stopped before it was complete."); }
          box.setAttribute("data-state", "done");
          return;
        }
        buffer += decoder.decode(chunk.value, {stream: true}).replace(/\r\n/g, "\n");
        var end;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
        return read();
      });
    }
    return read();
  }).catch(function () {
    showError("", "the answer could not be loaded.");
    box.setAttribute("data-state", "done");
  });
})();
