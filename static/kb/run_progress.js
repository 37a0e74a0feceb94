// Live progress for an ingest run's admin page: polls the run's progress.json while the run is
// queued or running and updates every part of the page from it (the bar above, the title, each
// field, the item table, which gains the items reported since the last poll); once the run ends
// it reloads, so the page shows the finished run as a fresh load would (retry button included).
(function () {
  "use strict";
  var MAX_ROWS = 500; // ITEMS_SHOWN in ingest/admin/runs.py

  function itemRows(group) {
    return group ? group.querySelectorAll("tbody tr.has_original, tbody tr.kb-live-item") : [];
  }

  function lastItemId(group) {
    var last = 0;
    if (!group) return last;
    group.querySelectorAll('tbody tr.has_original input[name$="-id"]').forEach(function (input) {
      last = Math.max(last, parseInt(input.value, 10) || 0);
    });
    return last;
  }

  function addItems(group, items) {
    var template = group && group.querySelector("tbody tr.empty-form");
    if (!template) return;
    items.forEach(function (item) {
      if (itemRows(group).length >= MAX_ROWS) return;
      var row = template.cloneNode(true);
      row.classList.remove("empty-form");
      row.classList.add("kb-live-item");
      row.id = "items-live-" + item.id;
      row.querySelectorAll("input").forEach(function (input) { input.remove(); });
      var original = row.querySelector("td.original");
      if (original) {
        var label = document.createElement("p");
        label.textContent = item.label;
        original.appendChild(label);
      }
      Object.keys(item.cells).forEach(function (name) {
        var cell = row.querySelector("td.field-" + name + " p");
        if (cell) cell.textContent = item.cells[name];
      });
      template.parentNode.insertBefore(row, template);
    });
  }

  function setFields(fields) {
    Object.keys(fields).forEach(function (name) {
      var value = document.querySelector(".field-" + name + " .readonly");
      if (value) value.textContent = fields[name];
    });
  }

  function setTitle(title) {
    var heading = document.querySelector("#content h1");
    if (heading) heading.textContent = title;
    var rest = document.title.indexOf(" | ");
    document.title = title + (rest >= 0 ? document.title.slice(rest) : "");
  }

  function setProgressField(run) {
    var bar = document.querySelector(".field-progress_bar progress");
    if (!bar) return;
    bar.value = run.percent;
    bar.textContent = run.percent + "%";
    bar.setAttribute("aria-label", run.items_done + " of " + run.items_total + " items");
    var text = bar.nextSibling;
    if (text && text.nodeType === Node.TEXT_NODE) text.textContent = " " + run.items_done + "/" + run.items_total;
  }

  function start() {
    var box = document.querySelector(".kb-run-live");
    if (!box) return;
    var status = box.dataset.status;
    if (status !== "queued" && status !== "running") return;
    var bar = box.querySelector("progress");
    var text = box.querySelector(".kb-run-text");
    var note = box.querySelector(".kb-run-note");
    var group = document.getElementById("items-group");
    var after = lastItemId(group);
    function poll() {
      var url = box.dataset.progressUrl + "?after=" + after;
      fetch(url, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (run) {
          bar.value = run.percent;
          text.textContent = run.status + ": " + run.items_done + "/" + run.items_total +
            " items, " + run.chunks_embedded + "/" + run.chunks_total + " chunks embedded, " +
            run.items_failed + " errors";
          if (note) note.textContent = run.note;
          setTitle(run.title);
          setFields(run.fields);
          setProgressField(run);
          addItems(group, run.items);
          run.items.forEach(function (item) { after = Math.max(after, item.id); });
          box.dataset.status = run.status;
          if (run.status === "queued" || run.status === "running") {
            setTimeout(poll, 1000);
          } else {
            window.location.reload();
          }
        })
        .catch(function () { setTimeout(poll, 3000); });
    }
    setTimeout(poll, 1000);
  }
  document.addEventListener("DOMContentLoaded", start);
})();
