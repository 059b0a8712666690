"""The fence around the project's replacements of dbt macros (macros/overrides/; CONTRIBUTING.md, "The dbt-override
fence").

Each override's first line names the installed dbt macro it follows: `{# upstream: <package> <version> <file
under site-packages> <macro> <sha256 prefix of that macro's text> #}`. The test fails when the installed
macro's text is no longer the one the override was written against (dbt-core, dbt-adapters or dbt-spark
changed it), so an upgrade cannot silently leave an override behind; and when a project macro outside
macros/overrides/ replaces a dbt macro, or an adapter implementation of one, unfenced. The dbt plugin's wrapper
of dbt-spark's session cursor is fenced the same way (dbt_cdc_udfs.WRAPS). No Spark, no dbt run.
"""

import ast
import hashlib
import re
import sysconfig
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers import PROJECT_DIR

from dbt_cdc_udfs import WRAPS

OVERRIDES = PROJECT_DIR / "macros" / "overrides"
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
DBT_MACROS = SITE_PACKAGES / "dbt" / "include"
UPSTREAM_LINE = re.compile(r"\{# upstream: (\S+) (\S+) (\S+) (\S+) ([0-9a-f]{12}) #\}")
DEFINED = re.compile(r"\{%-?\s*(?:macro|materialization)\s+(\w+)")


def upstream_block(text: str, name: str) -> str:
    """The text of macro or materialization `name` in a file, from its opening tag to its end tag."""
    start = re.search(r"\{%-?\s*(?:macro|materialization)\s+" + re.escape(name) + r"\b", text)
    assert start, f"{name} is not defined there"
    end = re.compile(r"\{%-?\s*end(?:macro|materialization)\s*-?%\}").search(text, start.end())
    return text[start.start() : end.end()]


def fingerprint(block: str) -> str:
    return hashlib.sha256(block.encode()).hexdigest()[:12]


@pytest.mark.parametrize("override", sorted(OVERRIDES.glob("*.sql")), ids=lambda path: path.name)
def test_each_override_follows_the_installed_dbt_macro(override: Path):
    first_line = override.read_text().splitlines()[0]
    fence = UPSTREAM_LINE.fullmatch(first_line)
    assert fence, f"{override.name}: the first line must be `{{# upstream: package version file macro sha256 #}}`"
    package, followed_version, file, name, recorded = fence.groups()
    upstream = SITE_PACKAGES / file
    assert upstream.is_file(), f"{package} {version(package)} has no {file}: {override.name} follows a moved macro"
    installed = fingerprint(upstream_block(upstream.read_text(), name))
    assert installed == recorded, (
        f"{package} {version(package)}'s {name} is not the one {override.name} follows ({package} "
        f"{followed_version}): compare the two, carry the change into the override, then record {installed}"
    )


def test_every_replacement_of_a_dbt_macro_is_in_the_overrides_folder():
    dbt_names = {name for path in DBT_MACROS.rglob("*.sql") for name in DEFINED.findall(path.read_text())}
    outside = [path for path in (PROJECT_DIR / "macros").rglob("*.sql") if OVERRIDES not in path.parents]
    unfenced = {
        f"{path.relative_to(PROJECT_DIR)}: {name}"
        for path in outside
        for name in DEFINED.findall(path.read_text())
        if name in dbt_names or name.startswith(("spark__", "default__"))
    }
    assert not unfenced, f"replacements of dbt macros outside macros/overrides/: {sorted(unfenced)}"


def method_source(module_text: str, qualified_name: str) -> str:
    """The source text of `Class.method` in a module's text."""
    class_name, method_name = qualified_name.split(".")
    module = ast.parse(module_text)
    (cls,) = [node for node in module.body if isinstance(node, ast.ClassDef) and node.name == class_name]
    (method,) = [node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == method_name]
    return ast.get_source_segment(module_text, method)


def test_the_plugin_wraps_the_installed_dbt_spark_cursor_it_was_written_for():
    package, followed_version, file, name, recorded = WRAPS
    upstream = SITE_PACKAGES / file
    assert upstream.is_file(), f"{package} {version(package)} has no {file}: dbt_cdc_udfs.py wraps a moved {name}"
    installed = fingerprint(method_source(upstream.read_text(), name))
    assert installed == recorded, (
        f"{package} {version(package)}'s {name} ({installed}) is not the one dbt_cdc_udfs.py wraps ({package} "
        f"{followed_version}, {recorded}): compare the two, carry the change into the wrapper, then record {installed}"
    )
