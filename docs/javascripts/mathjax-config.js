// MathJax 3's settings, read by the bundle loaded after this file (mkdocs.yml extra_javascript): typeset only
// what pymdownx.arithmatex marked (class "arithmatex"), whose generic output is \( ... \) and \[ ... \].
window.MathJax = {
  tex: {inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true, processEnvironments: true},
  options: {ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex"},
};
