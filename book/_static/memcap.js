// memcap textbook: small behaviours added to sphinx-book-theme (loaded by _config.yml).
(function () {
  "use strict";

  // The smallest a formula is shrunk to fit its column. Below about 85 % the subscripts and the parts of
  // a fraction in a display equation get too small to read on a phone; what still does not fit scrolls.
  var MIN_SCALE = 0.85;

  // Shrink a display equation that is wider than its column (on narrow screens) down to MIN_SCALE of its
  // size; whatever still does not fit scrolls sideways (see memcap.css), its cut edge faded (markEdges).
  // The page records that it ran in <html data-memcap-fitted>, and marks shrunk equations with the class
  // memcap-shrunk.
  function fitEquations() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (eq) {
      eq.style.fontSize = "";
      eq.classList.remove("memcap-shrunk");
      var box = eq.parentElement.clientWidth;
      var need = eq.scrollWidth;
      if (box > 0 && need > box + 1) {
        var ratio = Math.max(MIN_SCALE, (box - 2) / need);
        eq.style.fontSize = (100 * ratio).toFixed(1) + "%";
        eq.classList.add("memcap-shrunk");
      }
      markEdges(eq);
    });
    fitInlineMath();
    // a table wider than the column scrolls in its container (pydata-sphinx-theme's): the same faded edge
    document.querySelectorAll("article .pst-scrollable-table-container").forEach(markEdges);
    document.documentElement.dataset.memcapFitted = "1";
  }

  // Inline math cannot break across lines. A formula wider than the block it sits in (a theorem box on a
  // phone, which hides what overflows) is shrunk like a display equation (to MIN_SCALE at least) and
  // becomes a box of its own (class memcap-scroll) that scrolls sideways if it still does not fit.
  function fitInlineMath() {
    document.querySelectorAll('article mjx-container:not([display="true"])').forEach(function (eq) {
      eq.classList.remove("memcap-scroll");
      eq.style.fontSize = "";
      var block = eq.parentElement;
      while (block && getComputedStyle(block).display.indexOf("inline") === 0) { block = block.parentElement; }
      if (!block) { return; }
      var style = getComputedStyle(block);
      var room = block.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      var need = eq.getBoundingClientRect().width;
      // the punctuation glued to the formula (memcap.textbook.site) stays on its line: the formula is shrunk
      // to leave room for it, and only where that is not enough may the group wrap
      var glued = eq.closest(".memcap-nowrap"), extra = 0;
      if (glued) {
        glued.style.whiteSpace = "";
        extra = Math.max(0, glued.getBoundingClientRect().width - need);
      }
      if (room > 0 && need + extra > room + 1) {
        var scale = Math.max(MIN_SCALE, (room - extra - 2) / need);
        eq.style.fontSize = (100 * scale).toFixed(1) + "%";
        eq.classList.add("memcap-scroll");
        if (glued && glued.getBoundingClientRect().width > room + 1) { glued.style.whiteSpace = "normal"; }
      }
      markEdges(eq);
    });
  }

  // A formula (or a table's container) that scrolls sideways fades out at an edge with more of it beyond
  // (classes memcap-more-left, memcap-more-right; memcap.css), so that a reader on a phone, whose
  // scrollbars stay hidden until touched, sees that it goes on. Updated as it scrolls.
  function markEdges(eq) {
    function update() {
      // only a box of its own scrolls (an inline formula in its line has no width to test)
      var scrolls = /auto|scroll/.test(getComputedStyle(eq).overflowX);
      var hidden = scrolls ? eq.scrollWidth - eq.clientWidth : 0;
      eq.classList.toggle("memcap-more-left", hidden > 1 && eq.scrollLeft > 1);
      eq.classList.toggle("memcap-more-right", hidden > 1 && eq.scrollLeft < hidden - 1);
    }
    if (!eq.dataset.memcapEdges) {
      eq.dataset.memcapEdges = "1";
      eq.addEventListener("scroll", update, {passive: true});
    }
    update();
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
        big.src = img.currentSrc || img.src;   // the drawing shown: a phone's own in a <picture>
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

  // Search results quote each page's text, in which math is TeX source ("\\(H(\\min(n,d_h)-1)+1\\)").
  // Write it as plain text instead ("H(min(n,d_h)−1)+1"), so that snippets read without MathJax.
  var TEX_WORDS = {le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", times: "×", cdot: "·",
    infty: "∞", in: "∈", notin: "∉", to: "→", mapsto: "↦", sum: "Σ", prod: "Π", approx: "≈", sim: "~",
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", Delta: "Δ", varepsilon: "ε", epsilon: "ε", eta: "η",
    theta: "θ", Theta: "Θ", lambda: "λ", mu: "μ", pi: "π", rho: "ρ", sigma: "σ", Sigma: "Σ", phi: "φ",
    varphi: "φ", omega: "ω", Omega: "Ω", ell: "ℓ", dots: "…", ldots: "…", cdots: "⋯", top: "ᵀ",
    lVert: "‖", rVert: "‖", Vert: "‖", mid: "|", langle: "⟨", rangle: "⟩", subset: "⊂", cap: "∩", cup: "∪"};
  function texToText(tex) {
    return tex
      .replace(/\\(?:mathbb|mathcal|mathbf|mathrm|operatorname|text|textrm|boldsymbol)\{([^{}]*)\}/g, "$1")
      .replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])/g, "")
      .replace(/\\[,;:! ]|\\q?quad(?![A-Za-z])/g, " ")
      .replace(/\\([A-Za-z]+)/g, function (m, word) { return TEX_WORDS[word] || word; })
      .replace(/[{}]/g, "")
      .replace(/-/g, "−");
  }
  function plainMath(root) {
    root.querySelectorAll("span.math, div.math").forEach(function (el) {
      var tex = el.textContent.replace(/^\s*(\\\(|\\\[|\$\$?)/, "").replace(/(\\\)|\\\]|\$\$?)\s*$/, "");
      el.textContent = texToText(tex);
    });
  }
  function patchSearch() {
    // searchtools.js declares `const Search`, which is global but not a property of window
    if (typeof Search === "undefined" || !Search.htmlToText || Search.memcapPatched) { return; }
    var original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      plainMath(doc);
      return original.call(Search, doc.documentElement.outerHTML, anchor);
    };
    Search.memcapPatched = true;
  }
  patchSearch();
  document.addEventListener("DOMContentLoaded", patchSearch);

  // The download menu's "book (.pdf)" entry (memcap.textbook.site) points at the PDF that
  // `python -m memcap pdf` prints after the site's build: a site built without it drops the entry
  // rather than offer a link that answers 404.
  function pdfEntry() {
    document.querySelectorAll("a.btn-download-book-pdf-button").forEach(function (link) {
      var item = link.closest("li") || link;
      if (location.protocol !== "http:" && location.protocol !== "https:") { return; }
      fetch(link.href, {method: "HEAD"}).then(function (answer) {
        if (!answer.ok) { item.remove(); }
      }).catch(function () { item.remove(); });
    });
  }

  window.addEventListener("load", function () {
    patchSearch();
    zoomable();
    pdfEntry();
    afterMath(fitEquations);
    var timer = null;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(fitEquations, 150);
    });
  });
})();
