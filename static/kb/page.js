// The reader pages' small behaviours; served from 'self', so the Content-Security-Policy holds.
(function () {
  "use strict";
  // "/" focuses the search box, unless the reader is already typing somewhere
  document.addEventListener("keydown", function (event) {
    var box = document.getElementById("q");
    var typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
    if (box && event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      box.focus();
      box.select();
    }
  });
  // a new namespace has its own sources: the source filter starts again at "all sources"
  var namespace = document.getElementById("namespace");
  var source = document.getElementById("source");
  if (namespace && source) {
    namespace.addEventListener("change", function () {
      source.value = "";
      source.disabled = true;  // its options belong to the previous namespace until the page reloads
      namespace.form.submit();
    });
  }
  // the document view: a citation of a section anchor highlights that section's passage
  function markCited() {
    var old = document.querySelectorAll(".passage.cited");
    for (var i = 0; i < old.length; i++) { old[i].classList.remove("cited"); }
    if (!location.hash) { return; }
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    var passage = target && target.closest(".passage");
    if (passage) { passage.classList.add("cited"); }
  }
  markCited();
  window.addEventListener("hashchange", markCited);
  // the document view: a table wider than the screen says so above it (search.css shades its hidden side)
  function markWideTables() {
    var tables = document.querySelectorAll(".document .text table");
    for (var i = 0; i < tables.length; i++) {
      var table = tables[i];
      var wide = table.scrollWidth > table.clientWidth + 1;
      var hint = table.previousElementSibling;
      var hinted = hint && hint.classList.contains("table-hint");
      table.classList.toggle("wide", wide);
      if (wide && !hinted) {
        hint = document.createElement("p");
        hint.className = "table-hint";
        hint.textContent = "\u2194 This table is wider than the screen: scroll it sideways for more columns.";
        table.parentNode.insertBefore(hint, table);
      } else if (!wide && hinted) {
        hint.parentNode.removeChild(hint);
      }
    }
  }
  markWideTables();
  window.addEventListener("resize", markWideTables);
  // weak results: the "did you mean" arrives after the page, from /suggest
  var pending = document.querySelector(".correction[data-suggest]");
  if (pending && window.fetch) {
    fetch(pending.getAttribute("data-suggest"), {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) {
        pending.setAttribute("data-suggested", body && body.correction ? "yes" : "no");  // answered
        if (!body || !body.correction) { return; }
        var link = document.createElement("a");
        link.href = "?" + new URLSearchParams({q: body.correction, namespace: pending.getAttribute("data-namespace"),
                                               group: pending.getAttribute("data-group")}).toString();
        link.textContent = body.correction;
        pending.textContent = "Did you mean ";
        pending.appendChild(link);
        pending.appendChild(document.createTextNode("?"));
        pending.hidden = false;
      })
      .catch(function () { /* no suggestion: the results stand on their own */ });
  }
})();
