// Refreshes the figures of a page: every few seconds it fetches the page again and
// replaces each element marked data-live (by id) with the new one. The page works
// the same without it; nothing else runs.
(function () {
  "use strict";
  var live = document.querySelectorAll("[data-live][id]");
  if (!live.length) return;
  var every = Number(document.body.dataset.refresh || 5000);
  function tick() {
    fetch(location.href, { headers: { "X-Console-Live": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh) el.replaceWith(document.importNode(fresh, true));
        });
        document.body.dataset.updated = String(Date.now());
      })
      .catch(function () { /* keep the figures shown; try again */ })
      .finally(function () { setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
