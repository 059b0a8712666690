"""bench/README.md's tables of figures are the recorded ones (bench/results/): written by `make bench-readme`,
which every benchmark runs when it records, never edited by hand. No Spark."""

from bench.readme_tables import README, readme_with_tables, recorded


def test_the_benchmark_readme_tables_are_the_recorded_figures():
    text = README.read_text()
    assert "<!-- figures: " in text
    assert text == readme_with_tables(text, recorded("latest.json"), recorded("cluster.json")), (
        "bench/README.md's tables differ from bench/results/: run `make bench-readme`"
    )


def test_a_table_of_a_benchmark_not_recorded_says_so():
    text = "before\n<!-- figures: reads -->\nold\n<!-- /figures -->\nafter\n"
    assert readme_with_tables(text, {}, {}) == (
        "before\n<!-- figures: reads -->\n\nNot in bench/results/: run this benchmark.\n\n<!-- /figures -->\nafter\n"
    )
