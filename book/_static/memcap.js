// memcap textbook: small behaviours added to sphinx-book-theme (loaded by _config.yml).
(function () {
  "use strict";

  // Shrink a display equation that is wider than its column (on narrow screens) down to 70 % of its
  // size; whatever still does not fit scrolls sideways (see memcap.css). The page records that it ran
  // in <html data-memcap-fitted>, and marks shrunk equations with the class memcap-shrunk.
  function fitEquations() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (eq) {
      eq.style.fontSize = "";
      eq.classList.remove("memcap-shrunk");
      var box = eq.parentElement.clientWidth;
      var need = eq.scrollWidth;
      if (box > 0 && need > box + 1) {
        var ratio = Math.max(0.7, (box - 2) / need);
        eq.style.fontSize = (100 * ratio).toFixed(1) + "%";
        eq.classList.add("memcap-shrunk");
      }
    });
    document.documentElement.dataset.memcapFitted = "1";
  }

  function afterMath(callback) {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(callback);
    } else if (document.querySelector("script[src*='mathjax']")) {
      setTimeout(function () { afterMath(callback); }, 50);
    } else {
      callback();
    }
  }

  // Click a figure to see it at full size over the page; click again or press Escape to close.
  function zoomable() {
    document.querySelectorAll("figure img, div.cell_output img").forEach(function (img) {
      img.addEventListener("click", function () {
        var overlay = document.createElement("div");
        overlay.className = "memcap-zoom";
        overlay.setAttribute("role", "dialog");
        overlay.setAttribute("aria-label", img.alt || "figure");
        var big = document.createElement("img");
        big.src = img.src;
        big.alt = img.alt;
        overlay.appendChild(big);
        function close() { overlay.remove(); document.removeEventListener("keydown", onKey); }
        function onKey(event) { if (event.key === "Escape") { close(); } }
        overlay.addEventListener("click", close);
        document.addEventListener("keydown", onKey);
        document.body.appendChild(overlay);
      });
    });
  }

  window.addEventListener("load", function () {
    zoomable();
    afterMath(fitEquations);
    var timer = null;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(fitEquations, 150);
    });
  });
})();
