"""The documentation's MkDocs hook (mkdocs.yml ``hooks``): the formulas typeset offline.

The pages' TeX (``$...$`` and ``$$...$$``, marked by pymdownx.arithmatex) is typeset by MathJax 3's
``tex-svg-full.js`` from the installed ``django-static-mathjax`` (the bundle the HTML report inlines,
:func:`reports.render.mathjax_bundle`), written into the built site beside its licence: the site loads no script
from a CDN. Without the package the build fails, naming it (the docs extra of pyproject.toml installs it with the
project).
"""

from __future__ import annotations

from mkdocs.structure.files import File, Files

from reports.render import MATHJAX_PACKAGE, mathjax_bundle

#: Where the bundle lies in the built site; mkdocs.yml's ``extra_javascript`` loads it from there.
BUNDLE_PATH = "javascripts/mathjax/tex-svg-full.js"
LICENCE_PATH = "javascripts/mathjax/LICENSE"


def on_files(files: Files, config) -> Files:
    """Add the MathJax bundle and its licence (Apache-2.0 asks that recipients get a copy) to the site's files."""
    bundle = mathjax_bundle()
    if bundle is None:
        raise RuntimeError(f"the documentation's formulas need MathJax: pip install {MATHJAX_PACKAGE}")
    _version, script, licence = bundle
    files.append(File.generated(config, BUNDLE_PATH, content=script))
    files.append(File.generated(config, LICENCE_PATH, content=licence))
    return files
