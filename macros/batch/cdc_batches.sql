{#
    One batch per run (README, "The scheduled run"), for the pipeline's models (cdc_pipeline_node) alone: every other
    model of the project is plain dbt. `dbt run` / `dbt build` of pipeline models opens a batch in the run
    log before any model runs: the landing table's version at that moment. Each incremental model reads the
    landing commits,
    or the rows its upstream models wrote, since the last batch it finished, up to this batch, with the
    bounds rendered as literals so Delta skips every file outside them; it stamps what it writes with this
    batch's id. The run's end records the batch for each model that succeeded, so a model that failed, was
    not selected, or ran in a run that crashed catches up at its next run.

    The run log is two Delta tables in the target schema:
    - cdc_batches: batch_id, landing_version (the landing table's version the batch reads up to), opened_at;
    - cdc_batch_models: model_name, batch_id, finished_at (a model finished a batch: it holds every row of
      it; finished_at null: the model started building its table from scratch in that batch, see
      cdc_forget_unfinished_batches);
    and the view cdc_finished_batches: what each model finished last (cdc_finished_batches), which cdc-build
    reads too (docs/decisions.md, "The batch's rules are dbt's; cdc-build reads them").
#}


{% macro cdc_run_log() %}
    {{- return(target.schema) -}}
{% endmacro %}


{# The batch of this run, kept in the session's configuration from the run's start to its end. #}
{% macro cdc_batch_state_key() %}
    {{- return('cdc.batch.' ~ target.schema) -}}
{% endmacro %}


{#
    on-run-start: records the batch of this run and keeps the run log's state for the models. A run that
    selects no incremental model of the pipeline (the audit, the seeds' cdc_type_mappings, the typed views, a
    run of analysts' models alone) reads no batch and opens none.
#}
{% macro cdc_open_batch() %}
    {%- if not execute or flags.WHICH not in ('run', 'build') or not cdc_selects_incremental_models() -%}
        {{- return('') -}}
    {%- endif -%}
    {%- set log = cdc_run_log() -%}
    {%- if adapter.get_relation(database=none, schema=log, identifier='cdc_batch_models') is none
        or adapter.get_relation(database=none, schema=log, identifier='cdc_finished_batches') is none -%}
        {%- do cdc_create_run_log() -%}
    {%- endif -%}
    {#- dbt's relation cache does not know tables created above: the log is read without looking. -#}
    {%- set state = cdc_read_run_log(exists=true) -%}
    {%- set landing = cdc_landing_schema() ~ '.cdc_raw' -%}
    {%- set newest_version = run_query('describe history ' ~ landing ~ ' limit 1').columns['version'].values()[0] -%}
    {%- set batch = cdc_landed_batch(landing, state.landing_version, newest_version) -%}
    {%- do state.update({
        'invocation_id': invocation_id,
        'opened': true,
        'batch_id': state.batch_id + 1,
        'landing_version': batch.landing_version,
        'previous_landing_version': state.landing_version,
        'formats_landed': batch.formats
    }) -%}
    {%- do run_query(
        'insert into ' ~ log ~ '.cdc_batches values ('
        ~ state.batch_id ~ ', ' ~ batch.landing_version ~ ', current_timestamp())'
    ) -%}
    {%- do run_query('set ' ~ cdc_batch_state_key() ~ '=' ~ tojson(state)) -%}
    {%- do cdc_choose_code_generation(batch.messages) -%}
{% endmacro %}


{#
    Spark compiles Java code for each query it runs (whole-stage and expression code generation): tens of
    milliseconds on the driver per statement, whatever its rows, paid back only over many rows. A command
    that builds the pipeline's models alone (cdc-build's change log) runs a batch of at most var
    cdc_interpreted_batch_messages landed messages interpreted; a larger or first batch, and any command
    that also builds analysts' models, runs with the session's own settings (docs/decisions.md, "Small
    batches run interpreted"). The run's end gives the session its settings back.
#}
{% macro cdc_choose_code_generation(messages) %}
    {%- set interpreted = messages is not none
        and messages <= var('cdc_interpreted_batch_messages')
        and cdc_selects_pipeline_nodes_only() -%}
    {%- for key, value in cdc_interpreted_settings().items() -%}
        {%- do run_query(('set ' ~ key ~ '=' ~ value) if interpreted else ('reset ' ~ key)) -%}
    {%- endfor -%}
{% endmacro %}


{#
    Whole-stage code generation off, and expression code generation: spark.sql.codegen.factoryMode is a setting
    Spark keeps for its own tests, the only way to it; whole-stage alone gave a small batch a quarter of the gain.
#}
{% macro cdc_interpreted_settings() %}
    {{- return({'spark.sql.codegen.wholeStage': 'false', 'spark.sql.codegen.factoryMode': 'NO_CODEGEN'}) -}}
{% endmacro %}


{% macro cdc_selects_pipeline_nodes_only() %}
    {%- for unique_id in selected_resources if unique_id in graph.nodes
        and not cdc_pipeline_node(graph.nodes[unique_id]) -%}
        {{- return(false) -}}
    {%- endfor -%}
    {{- return(true) -}}
{% endmacro %}


{# The run log's two tables and its view of what each model finished, where they are not. #}
{% macro cdc_create_run_log() %}
    {%- set log = cdc_run_log() -%}
    {%- do run_query('create schema if not exists ' ~ log) -%}
    {%- do run_query(
        'create table if not exists ' ~ log ~ '.cdc_batches '
        ~ '(batch_id bigint, landing_version bigint, opened_at timestamp) using delta'
    ) -%}
    {%- do run_query(
        'create table if not exists ' ~ log ~ '.cdc_batch_models '
        ~ '(model_name string, batch_id bigint, finished_at timestamp) using delta'
    ) -%}
    {%- do run_query('create view if not exists ' ~ log ~ '.cdc_finished_batches as ' ~ cdc_finished_batches(log)) -%}
{% endmacro %}


{#
    What each model finished last, with that batch's landing version: the one statement of the rule, a view of
    the run log that the batch macros (cdc_read_run_log) and cdc-build (cdc_lakehouse/run_state.py) read. A
    model rebuilt from scratch in a batch it has not finished (its mark is newer than its last finished batch:
    a full refresh that crashed) has finished nothing of its present table.
#}
{% macro cdc_finished_batches(log) %}
    {{- return(
        'select finished.model_name, finished.batch_id, batches.landing_version from ('
        ~ ' select model_name, max(if(finished_at is not null, batch_id, null)) as batch_id,'
        ~ ' max(if(finished_at is null, batch_id, null)) as rebuilt_in_batch_id'
        ~ ' from ' ~ log ~ '.cdc_batch_models group by model_name'
        ~ ') as finished inner join ' ~ log ~ '.cdc_batches as batches on finished.batch_id = batches.batch_id'
        ~ ' where finished.rebuilt_in_batch_id is null or finished.batch_id >= finished.rebuilt_in_batch_id'
    ) -}}
{% endmacro %}


{#
    What the batch after one landing version reads: the landing commits up to the newest, or, when they hold more
    than var cdc_max_batch_messages, those up to the last that keeps the batch within it (at least one commit:
    a larger commit is a batch of its own); the rest are the next batches'. {landing_version, formats: those
    of its messages}. The batch's joins broadcast its keys, so its size, not the backlog's, sets the driver's
    memory. A first batch (no batch before it) reads everything, with formats and messages none; so does a
    landing table whose versions went back (replaced: the models stop, cdc_landed_rows).
#}
{% macro cdc_landed_batch(landing, after_version, newest_version) %}
    {%- if after_version is none or newest_version <= after_version -%}
        {{- return({'landing_version': newest_version, 'formats': none, 'messages': none}) -}}
    {%- endif -%}
    {%- set commits = run_query(
        'select _commit_version, source_format, count(*) from table_changes('
        ~ cdc_sql_string(landing) ~ ', ' ~ (after_version + 1) ~ ', ' ~ newest_version ~ ')'
        ~ " where _change_type = 'insert' group by _commit_version, source_format order by _commit_version"
    ).rows -%}
    {%- set batch = namespace(messages=0, landing_version=newest_version, formats=[], full=false) -%}
    {%- for version in commits | map(attribute=0) | unique | list if not batch.full -%}
        {%- set rows = commits | selectattr(0, 'equalto', version) | list -%}
        {%- set messages = rows | map(attribute=2) | map('int') | sum -%}
        {%- if batch.messages > 0 and batch.messages + messages > var('cdc_max_batch_messages') -%}
            {%- set batch.landing_version = version | int - 1 -%}
            {%- set batch.full = true -%}
        {%- else -%}
            {%- set batch.messages = batch.messages + messages -%}
            {%- set batch.formats = batch.formats + (rows | map(attribute=1) | list) -%}
        {%- endif -%}
    {%- endfor -%}
    {{- return({
        'landing_version': batch.landing_version,
        'formats': batch.formats | unique | list,
        'messages': batch.messages
    }) -}}
{% endmacro %}


{# Whether a node is the pipeline's (tag cdc_pipeline, dbt_project.yml): the batch machinery touches no other. #}
{% macro cdc_pipeline_node(node) %}
    {{- return('cdc_pipeline' in node.tags) -}}
{% endmacro %}


{% macro cdc_selects_incremental_models() %}
    {%- for unique_id in selected_resources
        if unique_id in graph.nodes and graph.nodes[unique_id].config.materialized == 'incremental'
        and cdc_pipeline_node(graph.nodes[unique_id]) -%}
        {{- return(true) -}}
    {%- endfor -%}
    {{- return(false) -}}
{% endmacro %}


{#
    on-run-end: the pipeline's models that succeeded finished this batch. What it recorded is logged as one line
    (`cdc_close_batch: ` and JSON: batch_id, finished), which cdc-build reads from dbt's events
    (cdc_lakehouse/build_plan.py, run_log_after) rather than reading the run log again.
#}
{% macro cdc_close_batch(results) %}
    {%- if not execute or flags.WHICH not in ('run', 'build') or not cdc_selects_incremental_models() -%}
        {{- return('') -}}
    {%- endif -%}
    {%- set batch_id = cdc_run_state().batch_id -%}
    {%- set finished = [] -%}
    {%- for result in results
        if result.node.resource_type == 'model'
        and result.node.config.materialized == 'incremental'
        and cdc_pipeline_node(result.node)
        and result.status == 'success' -%}
        {%- do finished.append(result.node.name) -%}
    {%- endfor -%}
    {%- if finished -%}
        {%- set rows = [] -%}
        {%- for name in finished -%}
            {%- do rows.append('(' ~ cdc_sql_string(name) ~ ', ' ~ batch_id ~ ', current_timestamp())') -%}
        {%- endfor -%}
        {%- do run_query('insert into ' ~ cdc_run_log() ~ '.cdc_batch_models values ' ~ rows | join(', ')) -%}
    {%- endif -%}
    {%- do log('cdc_close_batch: ' ~ tojson({'batch_id': batch_id, 'finished': finished})) -%}
    {%- do run_query('reset ' ~ cdc_batch_state_key()) -%}
    {%- for key in cdc_interpreted_settings() -%}
        {%- do run_query('reset ' ~ key) -%}
    {%- endfor -%}
{% endmacro %}


{#
    The run log as {batch_id, landing_version, previous_landing_version, models: {name: {batch_id,
    landing_version}}}: the newest batch, the landing version of the batch before it, and what each model
    finished last. Before the first run (no run log): batch 0, the landing table as it is.
#}
{% macro cdc_read_run_log(exists=none) %}
    {%- set state = {'batch_id': 0, 'landing_version': none, 'previous_landing_version': none, 'models': {}} -%}
    {%- set log = cdc_run_log() -%}
    {%- if not exists and adapter.get_relation(database=none, schema=log, identifier='cdc_batches') is none -%}
        {{- return(state) -}}
    {%- elif not exists and adapter.get_relation(database=none, schema=log, identifier='cdc_finished_batches') is none -%}
        {#- A run log from before the view: it is added, as the next run's start would. -#}
        {%- do cdc_create_run_log() -%}
    {%- endif -%}
    {%- set newest = run_query(
        'select batch_id, landing_version from ' ~ log ~ '.cdc_batches order by batch_id desc limit 2'
    ).rows -%}
    {%- if newest | length > 0 -%}
        {%- do state.update({'batch_id': newest[0][0], 'landing_version': newest[0][1]}) -%}
    {%- endif -%}
    {%- if newest | length > 1 -%}
        {%- do state.update({'previous_landing_version': newest[1][1]}) -%}
    {%- endif -%}
    {%- set finished = run_query('select model_name, batch_id, landing_version from ' ~ log ~ '.cdc_finished_batches') -%}
    {%- for row in finished.rows -%}
        {%- do state.models.update({row[0]: {'batch_id': row[1], 'landing_version': row[2]}}) -%}
    {%- endfor -%}
    {{- return(state) -}}
{% endmacro %}


{#
    The state the run's start kept (with `opened`: this invocation opened its batch), or (outside a run:
    test, compile, docs) the run log as it is, read once per dbt invocation and kept like a run's.
#}
{% macro cdc_run_state() %}
    {%- set kept = run_query('set ' ~ cdc_batch_state_key()).rows[0][1] -%}
    {%- if kept != '<undefined>' and fromjson(kept).invocation_id == invocation_id -%}
        {{- return(fromjson(kept)) -}}
    {%- endif -%}
    {%- set state = cdc_read_run_log() -%}
    {%- do state.update({'invocation_id': invocation_id}) -%}
    {%- do run_query('set ' ~ cdc_batch_state_key() ~ '=' ~ tojson(state)) -%}
    {{- return(state) -}}
{% endmacro %}


{#
    The batch this model reads: batch_id and landing_version of this run, and what it finished last
    (finished_batch_id, finished_landing_version: none when it reads everything, on a full build or before
    it finished any batch).
#}
{% macro cdc_batch() %}
    {%- if not execute -%}
        {{- return({
            'batch_id': 0,
            'landing_version': none,
            'finished_batch_id': none,
            'finished_landing_version': none,
            'nothing_to_read': false
        }) -}}
    {%- endif -%}
    {%- if 'cdc_typed_table' in model.tags -%}
        {#- An earlier scaffold's typed history, now a view: its cdc_batch_id would be this batch's, not its rows'. -#}
        {{- exceptions.raise_compiler_error(
            model.original_file_path ~ ' was written by an earlier cdc-scaffold for typed tables merged per batch;'
            ~ ' typed tables are views now: `cdc-scaffold --refresh` writes it again'
        ) -}}
    {%- endif -%}
    {%- set state = cdc_run_state() -%}
    {%- set finished = state.models.get(model.name) if is_incremental() else none -%}
    {{- return({
        'batch_id': state.batch_id,
        'landing_version': state.landing_version,
        'finished_batch_id': finished.batch_id if finished else none,
        'finished_landing_version': finished.landing_version if finished else none,
        'nothing_to_read': finished is not none and cdc_nothing_to_read(state, graph.nodes[model.unique_id])
    }) -}}
{% endmacro %}


{#
    Whether an incremental model has nothing to read in this batch, known from the run's state alone (the
    materialization then runs none of its SQL): it finished a batch, and each of its batch inputs has
    nothing after that batch. Its batch inputs are the landing table and the nearest incremental models
    upstream (through ephemeral ones); tables, views and seeds it joins are lookups, not batches. The
    landing table has nothing after it when no commit landed since, or, for a staging model, when the commits
    since hold none of its formats (cdc_landed_nothing_it_stages); an incremental model when it finished
    no later batch (so it stamped no row the model has not read) and itself has nothing to read.
#}
{% macro cdc_nothing_to_read(state, node) %}
    {%- set finished = state.models.get(node.name) -%}
    {%- set inputs = cdc_batch_inputs(node) -%}
    {%- if flags.FULL_REFRESH or not finished or not inputs -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- for input_id in inputs -%}
        {%- if input_id.startswith('source.') -%}
            {%- if finished.landing_version != state.landing_version
                and not cdc_landed_nothing_it_stages(state, node, finished) -%}
                {{- return(false) -}}
            {%- endif -%}
        {%- else -%}
            {%- set input = graph.nodes[input_id] -%}
            {%- set input_finished = state.models.get(input.name) -%}
            {%- if not input_finished or input_finished.batch_id > finished.batch_id
                or not cdc_nothing_to_read(state, input) -%}
                {{- return(false) -}}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {{- return(true) -}}
{% endmacro %}


{#
    Whether the commits of this batch hold no message of the formats a staging model reads, so it has nothing
    to read from landing though something landed: it finished the batch before this one, and it is a staging
    model of the registry (its folder under models/staging/ is the staging name of its formats, var
    cdc_formats), none of which the batch's commits hold. Any other model reading landing reads every commit.
#}
{% macro cdc_landed_nothing_it_stages(state, node, finished) %}
    {%- set folder = node.fqn[-2] if node.fqn | length > 3 and node.fqn[1] == 'staging' else none -%}
    {%- set formats = cdc_formats(staging=folder) if folder else [] -%}
    {{- return(
        formats | length > 0
        and state.get('formats_landed') is not none
        and finished.landing_version == state.previous_landing_version
        and formats | select('in', state.formats_landed) | list | length == 0
    ) -}}
{% endmacro %}


{# The batch inputs of a node (unique ids): the sources and incremental models it reads, through ephemeral models. #}
{% macro cdc_batch_inputs(node) %}
    {%- set inputs = [] -%}
    {%- for parent_id in node.depends_on.nodes -%}
        {%- if parent_id.startswith('source.') -%}
            {%- do inputs.append(parent_id) -%}
        {%- elif parent_id.startswith('model.') -%}
            {%- set parent = graph.nodes[parent_id] -%}
            {%- if parent.config.materialized == 'incremental' -%}
                {%- do inputs.append(parent_id) -%}
            {%- elif parent.config.materialized == 'ephemeral' -%}
                {%- do inputs.extend(cdc_batch_inputs(parent)) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {{- return(inputs | unique | list) -}}
{% endmacro %}


{# The id this run stamps on what it writes. #}
{% macro cdc_batch_id(batch) -%}
    cast({{ batch.batch_id }} as bigint)
{%- endmacro %}


{# Rows an upstream model wrote in the batches this model has not finished (every row on a full build). #}
{% macro cdc_in_batch(batch, column='cdc_batch_id') -%}
    {%- if batch.finished_batch_id is none -%}
        true
    {%- else -%}
        {{ column }} > {{ batch.finished_batch_id }} and {{ column }} <= {{ batch.batch_id }}
    {%- endif -%}
{%- endmacro %}


{#
    The landing rows of the commits this model has not read: the commits between the landing version of the
    last batch it finished and this batch's (Delta's change data feed), or the table as of this batch's
    version on a full build.
#}
{% macro cdc_landed_rows(batch) -%}
    {%- set landing = source('landing', 'cdc_raw') -%}
    {%- if batch.finished_landing_version is none -%}
        (
            select * from {{ landing }}
            {%- if batch.landing_version is not none %} version as of {{ batch.landing_version }}{% endif %}
        )
    {%- elif batch.finished_landing_version > batch.landing_version -%}
        {{ exceptions.raise_compiler_error(
            model.name ~ ' read landing version ' ~ batch.finished_landing_version ~ ', the landing table is at '
            ~ batch.landing_version ~ ': it was replaced; rebuild with --full-refresh'
        ) }}
    {%- elif batch.finished_landing_version == batch.landing_version -%}
        (select * from {{ landing }} where false)
    {%- else -%}
        (
            select * from table_changes(
                '{{ landing }}', {{ batch.finished_landing_version + 1 }}, {{ batch.landing_version }}
            )
            where _change_type = 'insert'
        )
    {%- endif -%}
{%- endmacro %}


{#
    pre-hook of every model: an incremental model that did not finish the previous batch may hold rows of a
    batch it never finished (its run crashed before the run's end recorded it); they are deleted, so the
    model reads those batches again from scratch. A merge model keeps them: deleting a row the crashed run
    updated would lose what it held before, and the next merge rewrites it from the same events
    (cdc_history rebuilds every chain the batches touch, cdc_observed_column_types takes its mins and maxes
    again). Before a model finished any batch, or a batch since it last built its table from scratch (a
    full refresh that crashed), it reads everything, so it starts empty.

    That last case is told apart from a lost run log by a mark: an incremental model that builds its table
    from scratch (a first build, a full refresh) first records in cdc_batch_models that it started this
    batch (finished_at null). A model with no finished batch deletes its rows only when the run log holds
    that mark: rows without it were written before the run log was lost or recreated, and deleting them
    would silently empty the table (or refill it only in part once landing retention removed old
    messages), so the model stops with a message naming the two ways forward.
#}
{% macro cdc_forget_unfinished_batches() %}
    {%- if not execute or config.get('materialized') != 'incremental' -%}
        {{- return('') -}}
    {%- endif -%}
    {%- if not is_incremental() -%}
        {{- return(
            'insert into ' ~ cdc_run_log() ~ '.cdc_batch_models values ('
            ~ cdc_sql_string(model.name) ~ ', ' ~ cdc_run_state().batch_id ~ ', null)'
            if cdc_run_state().get('opened') else ''
        ) -}}
    {%- endif -%}
    {%- set batch = cdc_batch() -%}
    {%- if batch.finished_batch_id is none -%}
        {%- do cdc_refuse_rows_of_a_lost_run_log() -%}
        delete from {{ this }}
    {%- elif batch.finished_batch_id < batch.batch_id - 1 and config.get('incremental_strategy') != 'merge' -%}
        delete from {{ this }} where cdc_batch_id > {{ batch.finished_batch_id }}
    {%- endif -%}
{% endmacro %}


{# A model with no finished batch, rows in its table and no mark that it started a batch in this run log. #}
{% macro cdc_refuse_rows_of_a_lost_run_log() %}
    {%- set log = cdc_run_log() -%}
    {%- set started = run_query(
        'select count(*) as marks from ' ~ log ~ '.cdc_batch_models where model_name = '
        ~ cdc_sql_string(model.name) ~ ' and finished_at is null'
    ).rows[0]['marks'] -%}
    {%- if started > 0 or run_query('select 1 from ' ~ this ~ ' limit 1').rows | length == 0 -%}
        {{- return('') -}}
    {%- endif -%}
    {{ exceptions.raise_compiler_error(
        model.name ~ ': its table holds rows, but the run log (' ~ log ~ '.cdc_batches, ' ~ log
        ~ '.cdc_batch_models) has no batch this model started or finished: the run log was lost or recreated.'
        ~ ' Nothing was deleted. Either restore the run log (Delta: RESTORE TABLE ' ~ log ~ '.cdc_batch_models,'
        ~ ' and ' ~ log ~ '.cdc_batches, TO VERSION AS OF a version from before the loss), or rebuild this'
        ~ ' model from landing: dbt build --full-refresh --select ' ~ model.name
    ) }}
{% endmacro %}


{#
    The rows of a stored table that share the key columns with the rows of a batch: a semi join on the
    batch's keys (Spark broadcasts the batch), so an anti join against them reads a few rows, not the table.
#}
{% macro stored_rows_sharing_keys(stored, batch, keys, columns=['*']) -%}
    select {% for column in columns %}stored.{{ column }}{% if not loop.last %}, {% endif %}{% endfor %}
    from {{ stored }} as stored
    left semi join {{ batch }} as batch_keys
        on {% for key in keys %}{% if not loop.first %} and {% endif %}stored.{{ key }} = batch_keys.{{ key }}{% endfor %}
{%- endmacro %}
