"""MkDocs hooks of the documentation site: pages made from repository files, and their links.

- ``readme.md`` and ``changelog.md`` are the repository's README and CHANGELOG;
- ``examples/<name>.md`` shows one file of ``examples/``: its docstring (or leading comment), a
  screenshot where there is one, and its whole source. ``examples/index.md`` and the Examples
  section of the navigation list the examples a reader runs (its Python modules), each with the
  first paragraph of its docstring; the files they share (``_embedded.py``) and the scripts that
  make the screenshots have pages too, listed under the table and not in the navigation;
- a relative link is read from where its file lives in the repository and pointed at the page
  that shows the target on the site, so ``../README.md`` in ``docs/index.md`` and
  ``docs/guide.md`` in the README work both on the site and when browsing the repository.
  A link to a repository file the site does not show is left alone, and ``--strict`` fails.

Loaded by ``mkdocs.yml`` (``hooks:``); runs in the ``mkdocs`` process. Importing it needs no
MkDocs (``tests/meta/test_docsite.py`` checks the functions above the events).
"""

from __future__ import annotations

import ast
import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GENERATED = {"readme.md": "README.md", "changelog.md": "CHANGELOG.md"}
"""Site page -> the repository file it shows as it is."""
SCREENSHOTS = {
    "tk_agents.py": ("images/tk-example.png", "The Tk example, listing three agents"),
    "qt_agents.py": ("images/qt-example.png", "The Qt example: three agents beside the selected one's timeline"),
}
"""Example -> (image under docs/, its alt text), shown above the example's source."""
LINK = re.compile(r"(?<=\]\()(?P<target>[^)\s#]*)(?P<fragment>#[^)\s]*)?(?=\))")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)


def example_files() -> list[Path]:
    """The files of ``examples/`` the site shows, its Python modules and shell scripts: the
    examples a reader runs by name, then the files that support them by name."""
    shown = [path for path in EXAMPLES.iterdir() if path.suffix in {".py", ".sh"}]
    return sorted(shown, key=lambda path: (not is_runnable_example(path), path.name))


def is_runnable_example(path: Path) -> bool:
    """Whether ``path`` is an example a reader runs: a Python module not named ``_*``; the
    helper modules and the screenshot scripts support the examples."""
    return path.suffix == ".py" and not path.name.startswith("_")


def runnable_examples() -> list[Path]:
    """The examples a reader runs, by name: the rows of the index and the navigation."""
    return [path for path in example_files() if is_runnable_example(path)]


def _description(path: Path) -> str:
    """A module's docstring, or a script's leading comment, as Markdown."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return ast.get_docstring(ast.parse(source)) or ""
    lines = [line for line in source.splitlines()[1:] if line.startswith("#")]
    comment = []
    for line in lines:
        text = line[1:]
        comment.append(text[1:] if text.startswith(" ") else text)
    return "\n".join(comment)


def _summary(path: Path) -> str:
    return _description(path).split("\n\n", 1)[0].replace("\n", " ")


def example_page(path: Path) -> str:
    """The page of one example."""
    source = path.read_text(encoding="utf-8")
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", source))])
    language = "python" if path.suffix == ".py" else "sh"
    lines = [f"# `{path.name}`", "", _description(path), ""]
    if path.name in SCREENSHOTS:
        image, alt = SCREENSHOTS[path.name]
        lines += [f"![{alt}](../{image})", ""]
    lines += [
        "## Source",
        "",
        f'{fence}{language} title="examples/{path.name}"',
        source.rstrip("\n"),
        fence,
        "",
    ]
    return "\n".join(lines)


def examples_index() -> str:
    """The page listing every example."""
    lines = [
        "# Examples",
        "",
        "Every example runs in the test suite (`tests/meta/test_examples.py`). Without `--url` an",
        'example starts an embedded demo daemon (`pip install -e ".[demo]"`); `--url` points it at a',
        "real daemon.",
        "",
        "| Example | What it shows |",
        "| --- | --- |",
    ]
    lines += [f"| [`{path.name}`]({path.stem}.md) | {_summary(path)} |" for path in runnable_examples()]
    lines += ["", "The files behind them:", ""]
    lines += [
        f"- [`{path.name}`]({path.stem}.md): {_summary(path)}"
        for path in example_files()
        if not is_runnable_example(path)
    ]
    return "\n".join(lines) + "\n"


def site_path(repository_path: str) -> str | None:
    """The page (under ``docs_dir``) that shows a repository file; ``None`` if none does."""
    if repository_path.startswith("docs/"):
        return repository_path[len("docs/") :]
    for page, shown in GENERATED.items():
        if repository_path == shown:
            return page
    if repository_path in {"examples", "examples/"}:
        return "examples/index.md"
    if repository_path.startswith("examples/") and (ROOT / repository_path).suffix in {".py", ".sh"}:
        return f"examples/{Path(repository_path).stem}.md"
    return None


def repository_path(src_uri: str) -> str:
    """Where the file a page comes from lives in the repository."""
    if src_uri in GENERATED:
        return GENERATED[src_uri]
    if src_uri.startswith("examples/") and src_uri != "examples/index.md":
        return f"examples/{Path(src_uri).stem}.py"
    return f"docs/{src_uri}"


def rewrite_links(markdown: str, src_uri: str) -> str:
    """``markdown`` of the page ``src_uri`` with its relative links pointing at site pages.
    Fenced code blocks are left as they are."""
    origin = posixpath.dirname(repository_path(src_uri))
    here = posixpath.dirname(src_uri)

    def point(match: re.Match[str]) -> str:
        target, fragment = match["target"], match["fragment"] or ""
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return match.group(0)
        shown = site_path(posixpath.normpath(posixpath.join(origin, target)))
        if shown is None:
            return match.group(0)
        return posixpath.relpath(shown, here or ".") + fragment

    pieces: list[str] = []
    last = 0
    for fence in FENCE.finditer(markdown):
        pieces += [LINK.sub(point, markdown[last : fence.start()]), fence.group(0)]
        last = fence.end()
    pieces.append(LINK.sub(point, markdown[last:]))
    return "".join(pieces)


# ----------------------------------------------------------------------------- MkDocs events


def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    """Lists the examples a reader runs under the Examples section of the navigation."""
    for item in config.nav or []:
        if isinstance(item, dict) and isinstance(item.get("Examples"), list):
            item["Examples"] += [{path.name: f"examples/{path.stem}.md"} for path in runnable_examples()]
    return config


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    from mkdocs.structure.files import File, InclusionLevel

    for page, shown in GENERATED.items():
        files.append(File.generated(config, page, content=(ROOT / shown).read_text(encoding="utf-8")))
    files.append(File.generated(config, "examples/index.md", content=examples_index()))
    for path in example_files():
        inclusion = InclusionLevel.UNDEFINED if is_runnable_example(path) else InclusionLevel.NOT_IN_NAV
        uri = f"examples/{path.stem}.md"
        files.append(File.generated(config, uri, content=example_page(path), inclusion=inclusion))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files, **kwargs: Any) -> str:
    return rewrite_links(markdown, page.file.src_uri)
