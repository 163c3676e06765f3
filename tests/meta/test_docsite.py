"""The documentation site's own pages and links (docs/_tooling/hooks.py): the README, the
CHANGELOG and every example are pages of the site, and a relative link written for the
repository leads to the page that shows its target. ``mkdocs build --strict`` in .ci/run
checks the whole site; these checks need no MkDocs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "_tooling" / "hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_links_lead_to_site_pages(hooks: ModuleType) -> None:
    markdown = (
        "[guide](docs/guide.md#connecting) · [API](docs/api/index.md) · [examples](examples/) · [log](CHANGELOG.md)"
    )
    assert hooks.rewrite_links(markdown, "readme.md") == (
        "[guide](guide.md#connecting) · [API](api/index.md) · [examples](examples/index.md) · [log](changelog.md)"
    )


def test_links_from_pages_in_folders_are_relative_to_them(hooks: ModuleType) -> None:
    assert hooks.rewrite_links("[README](../README.md)", "index.md") == "[README](readme.md)"
    assert hooks.rewrite_links("[guide](../guide.md#connecting)", "api/client.md") == "[guide](../guide.md#connecting)"
    assert hooks.rewrite_links("[README](../../README.md)", "api/client.md") == "[README](../readme.md)"
    assert hooks.rewrite_links("[run](../examples/run_prompt.py)", "guide.md") == "[run](examples/run_prompt.md)"


def test_other_links_are_left_alone(hooks: ModuleType) -> None:
    unchanged = [
        "[Paseo](https://github.com/getpaseo/paseo)",
        "[below](#connecting)",
        "[setup](setup.cfg)",  # not on the site: the strict build reports it
        "```md\n[guide](docs/guide.md)\n```\n",
    ]
    for markdown in unchanged:
        assert hooks.rewrite_links(markdown, "readme.md") == markdown


def test_every_relative_link_of_the_readme_has_a_page(hooks: ModuleType) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)", readme)
    local = [target for target in targets if "://" not in target]
    assert local, readme
    assert [target for target in local if hooks.site_path(target.rstrip("/") or target) is None] == []


def test_every_example_has_a_page_with_its_source(hooks: ModuleType) -> None:
    examples = sorted(path.name for path in (ROOT / "examples").iterdir() if path.suffix in {".py", ".sh"})
    assert sorted(path.name for path in hooks.example_files()) == examples
    index = hooks.examples_index()
    for path in hooks.example_files():
        page = hooks.example_page(path)
        assert page.startswith(f"# `{path.name}`\n"), page[:80]
        assert path.read_text(encoding="utf-8").rstrip("\n") in page
        assert f"]({path.stem}.md)" in index
    assert "](../images/tk-example.png)" in hooks.example_page(ROOT / "examples" / "tk_agents.py")
    assert all((ROOT / "docs" / image).is_file() for image, _alt in hooks.SCREENSHOTS.values())


def test_links_to_pages_read_as_their_titles() -> None:
    """A link to a page is written with the page's title, never its file name (``[threading.md](...)``)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    file_named = re.compile(r"\[`?[\w./-]+\.md`?\]\(")
    found = [
        f"{page.relative_to(ROOT)}: {match.group(0)}"
        for page in pages
        for match in file_named.finditer(page.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_examples_menu_lists_the_examples_a_reader_runs(hooks: ModuleType) -> None:
    runnable = [path.name for path in hooks.runnable_examples()]
    assert "run_prompt.py" in runnable
    assert [name for name in runnable if name.startswith("_") or not name.endswith(".py")] == []
    config = type("Config", (), {"nav": [{"Examples": ["examples/index.md"]}]})()
    listed = hooks.on_config(config).nav
    assert [next(iter(entry)) for entry in listed[0]["Examples"][1:]] == runnable
    rows = [line for line in hooks.examples_index().splitlines() if line.startswith("| [")]
    assert [re.match(r"\| \[`([^`]+)`\]", row)[1] for row in rows] == runnable  # type: ignore[index]
    assert all("\n" not in hooks._summary(path) for path in hooks.runnable_examples())


def test_every_api_page_is_reachable_from_the_index_and_the_navigation() -> None:
    pages = sorted(path.name for path in (ROOT / "docs" / "api").glob("*.md") if path.name != "index.md")
    index = (ROOT / "docs" / "api" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert [page for page in pages if page not in linked] == [], "add a row to docs/api/index.md"
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    in_nav = set(re.findall(r"^\s+- (?:[^:\n]+: )?api/([\w-]+\.md)$", config, re.MULTILINE))
    assert [page for page in [*pages, "index.md"] if page not in in_nav] == [], "add the page to nav: in mkdocs.yml"


def test_api_pages_show_only_public_bases() -> None:
    griffe = pytest.importorskip("griffe", reason="the docs extra (griffe) is not installed")
    spec = importlib.util.spec_from_file_location("griffe_sphinx", ROOT / "docs" / "_tooling" / "griffe_sphinx.py")
    assert spec is not None
    assert spec.loader is not None
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    package = griffe.load("daemon_client", search_paths=[str(ROOT)])
    timeline = package["subscriptions.timeline.TimelineSubscription"]
    handle = package["api.agents.handle.AgentHandle"]
    assert "Membership" in [str(base) for base in timeline.bases]
    extension.drop_internal_bases(package)
    assert [str(base) for base in timeline.bases] == []
    assert [str(base) for base in handle.bases] == ["AgentControls"]
    assert [str(base) for base in package["errors.ConnectionLost"].bases] == ["ConnectionUnavailable"]
