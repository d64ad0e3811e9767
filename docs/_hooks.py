"""mkdocs hooks of the site (mkdocs.yml, ``hooks:``).

* ``on_files``: the notebooks of the repository's ``notebooks/`` folder become
  pages. They live beside the code (``make notebooks`` re-runs them there, the
  test suite runs them from there), not in ``docs/``. Each
  ``notebooks/*.ipynb`` is added to the site's files as
  ``notebooks/<name>.ipynb`` before mkdocs-jupyter looks at the files (a higher
  event priority than the plugin's), so the plugin renders it with the outputs
  saved in it (``execute: false`` in mkdocs.yml: the build runs no notebook).
* ``on_post_page``: a notebook's links to another notebook or to a page of
  ``docs/`` lead to their pages on the site; and a page whose HTML shows a ``NOTE [Name]`` citation of the
  code (the griffe extension takes them out of the docstrings) or a raw
  reStructuredText role (``:func:`x```, which markdown does not read) logs a
  warning, and ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import html
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

_ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("mkdocs.hooks.aiograd")


@event_priority(100)  # before mkdocs-jupyter's on_files (priority 0) turns .ipynb files into pages
def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    for nb in sorted((_ROOT / "notebooks").glob("*.ipynb")):
        files.append(
            File(
                f"notebooks/{nb.name}",
                src_dir=str(_ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


# What must not reach a page: an internal note's citation, a raw role (``:func:`x```,
# ``:class:`X```, ...: in the HTML the backticks became <code>).
_LEAKS = re.compile(r"NOTE \[[^\]]*\]|:(?:func|class|meth|attr|mod|obj|data|exc|ref|py:\w+):(?:`|<code>)")


def leaks(page_html: str) -> list[str]:
    """The internal notes and raw roles shown in ``page_html`` (the text of the page, not
    its markup; the notebooks' code cells are shown too)."""
    text = html.unescape(re.sub(r"<(script|style)\b.*?</\1>", "", page_html, flags=re.S))
    return sorted({m.group(0).replace("<code>", "`") for m in _LEAKS.finditer(text)})


def notebook_links(page_html: str) -> str:
    """``page_html`` of a notebook page with the notebook's links into the site: to another
    notebook (``02-async-backward.ipynb``: its page) and to a page of docs/
    (``../docs/distributed.md``)."""
    names = {nb.name for nb in (_ROOT / "notebooks").glob("*.ipynb")}

    def link(m: re.Match[str]) -> str:
        target, anchor = m.group(1), m.group(2) or ""
        if target in names:
            return f'href="../{target[: -len(".ipynb")]}/{anchor}"'
        if target.startswith("../docs/") and target.endswith(".md"):
            page = target[len("../docs/"): -len(".md")]
            page = "" if page in ("README", "index") else page + "/"
            return f'href="../../{page}{anchor}"'
        return m.group(0)

    return re.sub(r'href="([\w./-]+?\.(?:ipynb|md))(#[^"]*)?"', link, page_html)


def on_post_page(output: str, page: Any, config: Any, **kwargs: Any) -> str:
    if page.file.src_uri.startswith("notebooks/") and page.file.src_uri.endswith(".ipynb"):
        output = notebook_links(output)
    found = leaks(output)
    if found:
        log.warning("%s shows internal notes or raw roles: %s", page.file.src_uri, ", ".join(found))
    return output
