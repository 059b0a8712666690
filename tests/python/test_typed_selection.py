"""cdc-build's second part creates the typed views no scheduled run created and those of tables whose columns
were added or retyped since, not those whose tables only have new versions (a view reads them as they come),
and selects exactly them in few dbt criteria (dbt matches each criterion against every node of the project):
one selector when every typed view is in the run; otherwise `fqn:<history>+` of the pipeline's nodes per
retyped table; an audit test and an analyst's model on a typed view are none of the pipeline's.

A copy of the project with three scaffolded Canal tables (shop.a, shop.b, shop.c); shop.a's current model has
one more test, tagged audit, which a scheduled run leaves to the audit, and an analyst's view on it (built by
cdc-build's last part, not its second). What each selection selects is what `dbt ls` lists with it (no Spark).
"""

import pytest
from helpers import mark_stored_history, project_without_typed_tables

from cdc_lakehouse.build_plan import (
    CHANGE_LOG,
    SCHEDULED,
    ChangedTable,
    pipeline_nodes,
    typed_nodes_to_build,
    typed_selection_arguments,
    views_on_merged,
)

TABLES = ("a", "b", "c")
AUDIT_TEST = "{{ config(tags=['audit']) }}\nselect * from {{ ref('shop__a__current') }} where false\n"
ANALYSTS_VIEW = "{{ config(materialized='view') }}\nselect id from {{ ref('shop__a__current') }}\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    from cdc_lakehouse.dbt_project import DbtProject
    from cdc_lakehouse.typed_model_files import scaffold_files
    from cdc_lakehouse.typed_model_names import SourceTable

    root = project_without_typed_tables(tmp_path_factory.mktemp("typed_selection") / "project")
    tables = root / "models" / "tables"
    tables.mkdir()
    for name in TABLES:
        table = SourceTable("shop", name, source_format="canal_json")
        for file_name, content in scaffold_files(table, f"shop__{name}").items():
            (tables / file_name).write_text(content)
    (root / "tests" / "shop__a__audited.sql").write_text(AUDIT_TEST)
    (root / "models" / "analytics").mkdir()
    (root / "models" / "analytics" / "a_ids.sql").write_text(ANALYSTS_VIEW)
    mark_stored_history(root, "shop__c__history")
    return DbtProject(project_dir=root, dbt_vars={"cdc_enabled_formats": ["canal_json"]})


def chosen(
    project,
    *retyped_tables: str,
    first_run: bool = False,
    built: dict[str, int] | None = None,
    touched: tuple[str, ...] = (),
) -> tuple[set[str], list[str]]:
    """The typed nodes cdc-build chooses after batch 2 retyped these tables and wrote versions of `touched`,
    every typed view created in batch 1 (none on a first run; else `built`), and the arguments that select
    them."""
    manifest = project.manifest()
    pipeline = pipeline_nodes(manifest, project.selected(SCHEDULED))
    typed = pipeline - set(project.selected(CHANGE_LOG))
    if built is None:
        built = {} if first_run else {node: 1 for node in typed if node.startswith("model.")}
    retyped = [ChangedTable("canal_json", "shop", None, table, 2) for table in retyped_tables]
    touched_tables = [ChangedTable("canal_json", "shop", None, table, 2) for table in touched]
    to_build = typed_nodes_to_build(manifest, pipeline, built, retyped, touched=touched_tables)
    return to_build, typed_selection_arguments(manifest, to_build, typed)


def names(nodes: set[str]) -> set[str]:
    return {node.split(".")[2] for node in nodes if node.startswith("model.")}


def test_a_first_run_selects_every_typed_table_with_one_selector(project):
    to_build, arguments = chosen(project, first_run=True)
    assert names(to_build) == {f"shop__{table}__{kind}" for table in TABLES for kind in ("history", "current")}
    assert arguments == ["--selector", "scheduled_typed_tables"]
    assert set(project.listed(*arguments)) == to_build


def test_a_run_that_retyped_nothing_creates_no_view(project):
    assert chosen(project)[0] == set()


def test_a_retyped_table_is_its_history_and_what_is_below_it(project):
    to_build, arguments = chosen(project, "b")
    assert names(to_build) == {"shop__b__history", "shop__b__current"}
    assert arguments == [
        "--select",
        "fqn:cdc_lakehouse.tables.shop__b__history+,tag:cdc_pipeline",
        "--indirect-selection",
        "empty",
    ]
    assert set(project.listed(*arguments)) == to_build


def test_a_current_view_behind_its_history_is_created_alone(project):
    built = {f"model.cdc_lakehouse.shop__{table}__{kind}": 1 for table in TABLES for kind in ("history", "current")}
    built["model.cdc_lakehouse.shop__b__history"] = 2
    to_build, arguments = chosen(project, built=built)
    assert names(to_build) == {"shop__b__current"}
    assert set(project.listed(*arguments)) == to_build


def test_two_retyped_tables_leave_out_the_audits_test_and_the_analysts_view(project):
    to_build, arguments = chosen(project, "a", "c")
    assert names(to_build) == {f"shop__{table}__{kind}" for table in "ac" for kind in ("history", "current")}
    assert not {"test.cdc_lakehouse.shop__a__audited", "model.cdc_lakehouse.a_ids"} & to_build
    assert arguments == [
        "--select",
        "fqn:cdc_lakehouse.tables.shop__a__history+,tag:cdc_pipeline",
        "fqn:cdc_lakehouse.tables.shop__c__history+,tag:cdc_pipeline",
        "--indirect-selection",
        "empty",
    ]
    assert set(project.listed(*arguments)) == to_build


def test_a_stored_history_whose_table_had_versions_is_built_alone(project):
    # shop.c's history is stored (cdc_stored_history): it merges the batch's versions, its current view reads
    # them as it is; shop.a's views read them without being created again.
    to_build, arguments = chosen(project, touched=("a", "c"))
    assert names(to_build) == {"shop__c__history"}
    assert set(project.listed(*arguments)) == to_build


def test_a_stored_history_built_through_the_batch_is_not_built_again(project):
    # As cdc-build records a merge: the history and the current view on it, built through batch 2.
    built = {f"model.cdc_lakehouse.shop__{table}__{kind}": 1 for table in TABLES for kind in ("history", "current")}
    built["model.cdc_lakehouse.shop__c__history"] = built["model.cdc_lakehouse.shop__c__current"] = 2
    assert chosen(project, built=built, touched=("c",))[0] == set()


def test_a_merge_keeps_the_views_on_it_current_unless_they_were_behind(project):
    manifest = project.manifest()
    pipeline = pipeline_nodes(manifest, project.selected(SCHEDULED))
    history, current = (f"model.cdc_lakehouse.shop__c__{kind}" for kind in ("history", "current"))
    assert views_on_merged(manifest, {history}, pipeline, {history: 1, current: 1}) == {current}
    # A current view a failed run left behind its history is created again, not recorded as current.
    assert views_on_merged(manifest, {history}, pipeline, {history: 2, current: 1}) == set()
