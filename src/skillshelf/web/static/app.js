// skillshelf dashboard: keyboard shortcuts and small conveniences. No inline scripts
// anywhere (the Content-Security-Policy forbids them); htmx does the partial updates.
(function () {
  "use strict";
  var pendingG = 0;
  var go = { o: "/", s: "/skills", r: "/review", c: "/curate", n: "/new" };

  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }

  function closePops(except) {
    document.querySelectorAll("details.pop[open]").forEach(function (d) {
      if (d !== except) d.removeAttribute("open");
    });
  }

  // On a narrow screen the filters beside the search box start folded: the hits come first.
  var narrow = window.matchMedia && window.matchMedia("(max-width: 900px)").matches;
  if (narrow) {
    document.querySelectorAll("details.morefilters[open]").forEach(function (d) { d.removeAttribute("open"); });
  }

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.altKey) return;
    // Ctrl/Cmd+S saves the editor
    if ((e.ctrlKey || e.metaKey) && (e.key === "s" || e.key === "S")) {
      var editor = document.getElementById("editor");
      if (editor) { e.preventDefault(); editor.requestSubmit(); }
      return;
    }
    if (e.ctrlKey || e.metaKey) return;
    if (e.key === "Escape") {
      closePops(null);
      if (typing(document.activeElement)) document.activeElement.blur();
      return;
    }
    if (typing(e.target)) return;
    if (e.key === "/") {
      var box = document.getElementById("tq") || document.getElementById("gq");
      if (box) { e.preventDefault(); box.focus(); box.select(); }
      return;
    }
    if (e.key === "g") { pendingG = Date.now(); return; }
    if (pendingG && Date.now() - pendingG < 1200 && go[e.key]) {
      pendingG = 0;
      window.location.href = go[e.key];
    }
  });

  // one open popover at a time; a click elsewhere closes it
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (d.matches && d.matches("details.pop") && d.open) {
      closePops(d);
      var first = d.querySelector("input:not([type=hidden]), textarea, button");
      if (first) first.focus();
    }
  }, true);
  document.addEventListener("click", function (e) {
    if (!e.target.closest("details.pop")) closePops(null);
  });

  // Curate: the box in a table's head ticks every box of its form; the button says how many
  function refresh(form) {
    var boxes = form.querySelectorAll("input[type=checkbox][name=skill]");
    var n = 0;
    boxes.forEach(function (b) { if (b.checked) n++; });
    var all = form.querySelector("input.tickall");
    if (all) {
      all.checked = n > 0 && n === boxes.length;
      all.indeterminate = n > 0 && n < boxes.length;
    }
    var said = form.querySelector(".ticked");
    if (said) said.textContent = n ? "(" + n + ")" : "";
  }
  document.querySelectorAll("input.tickall").forEach(function (box) {
    box.hidden = false;
    if (box.form) refresh(box.form);
  });
  document.addEventListener("change", function (e) {
    var t = e.target;
    if (!t.form || !t.form.querySelector("input.tickall")) return;
    if (t.matches("input.tickall")) {
      t.form.querySelectorAll("input[type=checkbox][name=skill]").forEach(function (b) { b.checked = t.checked; });
    }
    if (t.matches("input.tickall, input[type=checkbox][name=skill]")) refresh(t.form);
  });
})();
