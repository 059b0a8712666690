{#
    Table maintenance (README, "Operating it"): `cdc-maintain` (`make maintain`, a daily task of both
    orchestrators) runs `dbt run-operation cdc_expire_landing`, then `dbt run-operation cdc_maintain`.
    Between scheduled runs, never beside one (the schema's lease keeps them apart on a shared metastore), and
    beside ingest, which goes on landing:
    1. landing retention (cdc_expire_landing): landed messages ingested more than keep_days ago that every
       model reading landing has finished (landed in a commit up to the oldest landing version those models
       finished) are deleted, and the landing table records, per format, before when it removed messages
       (cdc_landing_retention_marks), so that a model that would read all of landing again refuses;
       messages of formats this deployment does not read stay. cdc-maintain holds the landing table's lease
       meanwhile, which every landing commit takes (cdc_lakehouse/landing_table.py): Delta would fail this
       read-and-delete if an ingest committed during it;
    2. the run log keeps keep_days of batches, and whatever the runs still read (each model's last finished
       batch, the two newest batches);
    3. every table the pipeline writes (its models and snapshot, the seeds, the run log) and landing are compacted
       (OPTIMIZE) and vacuumed: files no longer in the table and older than retain_hours go (the time-travel
       window), and for landing never a file of a commit some model has not read yet, nor one younger than
       an hour (an ingest beside writes its files before it commits them). A table younger than
       that window has no such file: it is not vacuumed (cdc_younger_than_retention). A model configured
       `cluster_by` (cdc_history: the typed views read one source table each) is made a Delta clustered
       table first, so its OPTIMIZE clusters what the runs wrote since the last one.
#}
{% macro cdc_expire_landing(keep_days=30) %}
    {%- set versions = cdc_landing_finished_versions(cdc_read_run_log()) -%}
    {%- set finished_by_some = versions | reject('none') | list -%}
    {#- Retention needs every model's batch; a model that finished none reads landing's current files. -#}
    {%- set finished_by_all = finished_by_some | min if versions and finished_by_some == versions else none -%}
    {%- do cdc_expire_landed_messages(cdc_landing_schema() ~ '.cdc_raw', finished_by_all, keep_days) -%}
{% endmacro %}


{% macro cdc_maintain(retain_hours=168, keep_days=30) %}
    {%- if retain_hours < 168 -%}
        {#- Delta refuses a retention under its own default unless told: the tables' writers are kept apart. -#}
        {%- do run_query('set spark.databricks.delta.retentionDurationCheck.enabled = false') -%}
    {%- endif -%}
    {%- set landing = cdc_landing_schema() ~ '.cdc_raw' -%}
    {%- set state = cdc_read_run_log() -%}
    {%- set finished_by_some = cdc_landing_finished_versions(state) | reject('none') | list -%}
    {#- After the expiry: its own commit is one the models have yet to read (through its change files). -#}
    {%- set unread_since = cdc_oldest_unread_landing_commit(
        landing, finished_by_some | min if finished_by_some else none
    ) -%}
    {%- do cdc_prune_run_log(state, keep_days) -%}
    {%- do cdc_cluster_tables() -%}
    {%- for relation in cdc_maintained_tables() -%}
        {%- do cdc_compact_and_vacuum(relation, retain_hours) -%}
    {%- endfor -%}
    {#- Landing keeps every file a model has yet to read, however old, and an hour of any other. -#}
    {%- set landing_hours = [retain_hours, 1] | max -%}
    {%- if unread_since is not none -%}
        {%- set unread_hours = run_query(
            "select ceil((unix_seconds(current_timestamp()) - unix_seconds(timestamp'" ~ unread_since
            ~ "')) / 3600) + 1 as hours"
        ).rows[0]['hours'] | int -%}
        {%- set landing_hours = [landing_hours, unread_hours] | max -%}
    {%- endif -%}
    {%- do cdc_compact_and_vacuum(landing, landing_hours) -%}
{% endmacro %}


{#
    The landing version each model that reads landing finished last (none for a model that has not
    finished a batch: it reads all of landing at its next run). Models read landing through
    cdc_landed_rows: the incremental models with the landing source among their batch inputs.
#}
{% macro cdc_landing_finished_versions(state) %}
    {%- set versions = [] -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.materialized == 'incremental' and cdc_pipeline_node(node) -%}
        {%- for input_id in cdc_batch_inputs(node) if input_id.startswith('source.') -%}
            {%- set model_finished = state.models.get(node.name) -%}
            {%- do versions.append(model_finished.landing_version if model_finished is not none else none) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{- return(versions) -}}
{% endmacro %}


{# The time of the oldest landing commit after `finished` that carries changes (text), or none. #}
{% macro cdc_oldest_unread_landing_commit(landing, finished) %}
    {%- set newest = run_query('describe history ' ~ landing ~ ' limit 1').columns['version'].values()[0] -%}
    {%- if finished is none or finished >= newest -%}
        {{- return(none) -}}
    {%- endif -%}
    {%- set oldest = run_query(
        'select cast(min(_commit_timestamp) as string) as oldest from table_changes('
        ~ cdc_sql_string(landing) ~ ', ' ~ (finished + 1) ~ ')'
    ).rows[0]['oldest'] -%}
    {{- return(oldest) -}}
{% endmacro %}


{#
    Landing retention: the messages of the enabled formats ingested more than keep_days ago and landed in a
    commit up to `finished` are deleted in one MERGE. The messages of later commits, which some model has
    not read, are kept whatever their ingested_at says (a late writer's), and so is any landed row at their
    (topic, partition, offset). Each format whose messages went is marked on the landing table with the
    cutoff.
#}
{% macro cdc_expire_landed_messages(landing, finished, keep_days) %}
    {%- if finished is none -%}
        {%- do log('cdc-maintain: ' ~ landing ~ ': no retention, a model has not finished a batch yet', info=true) -%}
        {{- return('') -}}
    {%- endif -%}
    {%- set cutoff = run_query(
        'select cast(current_timestamp() - make_interval(0, 0, 0, ' ~ keep_days ~ ') as string) as cutoff'
    ).rows[0]['cutoff'] -%}
    {%- set newest = run_query('describe history ' ~ landing ~ ' limit 1').columns['version'].values()[0] -%}
    {#-
        The keys of the commits not read yet, in a table of their own: Delta 4.4 plans table_changes of a table
        and the table itself in one query as two scans of the table (both return its rows).
    -#}
    {%- set unread = cdc_run_log() ~ '.cdc_maintenance_unread_landing' -%}
    {%- do run_query(
        'create or replace table ' ~ unread ~ ' using delta as select topic, kafka_partition, kafka_offset from '
        ~ (('table_changes(' ~ cdc_sql_string(landing) ~ ', ' ~ (finished + 1) ~ ')') if finished < newest
            else landing ~ ' where false')
    ) -%}
    {%- set formats = "'" ~ cdc_enabled_formats() | join("', '") ~ "'" -%}
    {%- set expired -%}
        select distinct landed.source_format, landed.topic, landed.kafka_partition, landed.kafka_offset
        from {{ landing }} as landed
        left anti join {{ unread }} as unread
            on
                {{ same_message('landed', 'unread') }}
        where landed.ingested_at < timestamp'{{ cutoff }}' and landed.source_format in ({{ formats }})
    {%- endset -%}
    {%- set expired_formats = run_query(
        'select source_format, count(*) as messages from (' ~ expired ~ ') group by source_format'
    ).rows -%}
    {%- if expired_formats | length > 0 -%}
        {%- set marks = [] -%}
        {%- for row in expired_formats -%}
            {%- do marks.append(
                cdc_sql_string(cdc_landing_retention_mark(row['source_format'])) ~ ' = ' ~ cdc_sql_string(cutoff)
            ) -%}
            {%- do log(
                'cdc-maintain: ' ~ landing ~ ': ' ~ row['messages'] ~ ' ' ~ row['source_format']
                ~ ' messages landed before ' ~ cutoff ~ ' and read by every model removed', info=true
            ) -%}
        {%- endfor -%}
        {#- The marks first: a crash between the two commits must not leave removed messages unmarked. -#}
        {%- do run_query('alter table ' ~ landing ~ ' set tblproperties (' ~ marks | join(', ') ~ ')') -%}
        {%- do run_query(
            'merge into ' ~ landing ~ ' as landed using (' ~ expired ~ ') as expired'
            ~ ' on ' ~ same_message('landed', 'expired') ~ ' and landed.source_format = expired.source_format'
            ~ " and landed.ingested_at < timestamp'" ~ cutoff ~ "' when matched then delete"
        ) -%}
    {%- else -%}
        {%- do log(
            'cdc-maintain: ' ~ landing ~ ': no message landed before ' ~ cutoff ~ ' that every model read', info=true
        ) -%}
    {%- endif -%}
    {%- do run_query('drop table ' ~ unread) -%}
{% endmacro %}


{# The landing table's property recording before when retention removed a format's messages. #}
{% macro cdc_landing_retention_mark(source_format) -%}
    {{- return('cdc.retention.removedBefore.' ~ source_format) -}}
{%- endmacro %}


{# Of these formats, those whose landed messages retention removed: {format: cutoff}. #}
{% macro cdc_landing_retention_marks(source_formats) %}
    {%- set marks = {} -%}
    {%- set landing = source('landing', 'cdc_raw') -%}
    {%- for row in run_query('show tblproperties ' ~ landing).rows -%}
        {%- for source_format in source_formats if row['key'] == cdc_landing_retention_mark(source_format) -%}
            {%- do marks.update({source_format: row['value']}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{- return(marks) -}}
{% endmacro %}


{#
    The run log keeps keep_days of batches, and what the runs read whatever its age: each model's last
    finished batch (cdc_read_run_log joins it to its landing version), the two newest batches, and the
    marks of models that started a batch without finishing one.
#}
{% macro cdc_prune_run_log(state, keep_days) %}
    {%- if state.batch_id == 0 -%}
        {{- return('') -}}
    {%- endif -%}
    {%- set log = cdc_run_log() -%}
    {%- set cutoff = 'current_timestamp() - make_interval(0, 0, 0, ' ~ keep_days ~ ')' -%}
    {%- set last_finished = [] -%}
    {%- set kept_batches = [state.batch_id, state.batch_id - 1] -%}
    {%- for name, finished in state.models.items() -%}
        {%- do last_finished.append(
            '(model_name = ' ~ cdc_sql_string(name) ~ ' and batch_id = ' ~ finished.batch_id ~ ')'
        ) -%}
        {%- do kept_batches.append(finished.batch_id) -%}
    {%- endfor -%}
    {%- do run_query(
        'delete from ' ~ log ~ '.cdc_batch_models where finished_at < ' ~ cutoff
        ~ (' and not (' ~ last_finished | join(' or ') ~ ')' if last_finished else '')
    ) -%}
    {%- do run_query(
        'delete from ' ~ log ~ '.cdc_batches where opened_at < ' ~ cutoff
        ~ ' and batch_id not in (' ~ kept_batches | unique | join(', ') ~ ')'
    ) -%}
{% endmacro %}


{#
    Liquid clustering (ALTER TABLE ... CLUSTER BY) of the pipeline's models configured `cluster_by` whose
    tables are not clustered so yet: clustering is incremental, OPTIMIZE clusters new files only.
#}
{% macro cdc_cluster_tables() %}
    {%- for node in graph.nodes.values()
        if cdc_pipeline_node(node) and node.config.get('cluster_by') and node.config.materialized == 'incremental' -%}
        {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
        {%- if relation is not none
            and run_query('describe detail ' ~ relation).rows[0]['clusteringColumns'] | list != node.config.cluster_by -%}
            {%- do run_query('alter table ' ~ relation ~ ' cluster by (' ~ node.config.cluster_by | join(', ') ~ ')') -%}
            {%- do log('cdc-maintain: ' ~ relation ~ ': clustered by ' ~ node.config.cluster_by | join(', '), info=true) -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}


{#
    The Delta tables the pipeline writes: its models' and snapshot's tables (stored typed histories too), the
    seeds and the run log; not analysts'.
#}
{% macro cdc_maintained_tables() %}
    {%- set tables = [] -%}
    {%- for node in graph.nodes.values()
        if (node.resource_type == 'seed' or cdc_pipeline_node(node))
        and node.config.materialized in ('table', 'incremental', 'cdc_stored_history', 'seed', 'snapshot') -%}
        {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
        {#- A history marked stored is a view until its first stored build. -#}
        {%- if relation is not none and not relation.is_view -%}
            {%- do tables.append(relation | string) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for name in ('cdc_batches', 'cdc_batch_models') -%}
        {%- if adapter.get_relation(database=none, schema=cdc_run_log(), identifier=name) is not none -%}
            {%- do tables.append(cdc_run_log() ~ '.' ~ name) -%}
        {%- endif -%}
    {%- endfor -%}
    {{- return(tables) -}}
{% endmacro %}


{#
    OPTIMIZE, then VACUUM keeping retain_hours of removed files; one line of what it did. A table of one
    file is not compacted: Delta's OPTIMIZE rewrites bins of two files or more, so it would rewrite nothing,
    not even a file whose deletion vector marks rows of it deleted. A table with no commit since a
    maintenance that left nothing to do is skipped (cdc_maintained_since_last_change), and one younger than
    retain_hours is not vacuumed (cdc_younger_than_retention); both read the table's newest commits once,
    before the OPTIMIZE.
#}
{% macro cdc_compact_and_vacuum(relation, retain_hours) %}
    {%- set history = cdc_newest_commits(relation) -%}
    {%- if cdc_maintained_since_last_change(relation, history) -%}
        {%- do log('cdc-maintain: ' ~ relation ~ ': no commit since its last vacuum, skipped', info=true) -%}
        {{- return(none) -}}
    {%- endif -%}
    {%- set detail = run_query('describe detail ' ~ relation).rows[0] -%}
    {%- if detail['numFiles'] > 1 -%}
        {%- do run_query('optimize ' ~ relation) -%}
        {%- set detail = run_query('describe detail ' ~ relation).rows[0] -%}
    {%- endif -%}
    {%- if cdc_younger_than_retention(relation, retain_hours, history) -%}
        {%- set vacuumed = 'not vacuumed, its first commit is within the ' ~ retain_hours ~ ' hours kept' -%}
    {%- else -%}
        {%- do run_query('vacuum ' ~ relation ~ ' retain ' ~ retain_hours ~ ' hours') -%}
        {%- set vacuumed = 'vacuumed (' ~ retain_hours ~ ' hours kept)' -%}
    {%- endif -%}
    {%- do log(
        'cdc-maintain: ' ~ relation ~ ': ' ~ detail['numFiles'] ~ ' files, '
        ~ (detail['sizeInBytes'] / 1024) | round(1) ~ ' KiB; ' ~ vacuumed, info=true
    ) -%}
{% endmacro %}


{#
    Whether a VACUUM keeping retain_hours would find nothing to delete because the table is younger than
    that: every file it removed, and every file its writes left, dates from its first commit or later.
    Reads the first commit among the newest 30 (describe history); a table with more is vacuumed. Files a
    crashed write left before the table's first commit wait until the table is older than retain_hours.
#}
{% macro cdc_younger_than_retention(relation, retain_hours, history=none) %}
    {%- if not execute -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- set history = cdc_newest_commits(relation) if history is none else history -%}
    {%- if history | length == 0 or history[-1]['version'] != 0 -%}
        {{- return(false) -}}
    {%- endif -%}
    {#- Both times come back through the same session, in the same time zone. -#}
    {%- set now = run_query('select current_timestamp() as now').rows[0]['now'] -%}
    {{- return(history[-1]['timestamp'] + modules.datetime.timedelta(hours=retain_hours) > now) -}}
{% endmacro %}


{#
    Whether a table is as the last maintenance left it, with nothing for another to do: its newest commits
    are a completed VACUUM, and its last other commit (the maintenance's OPTIMIZE, a run's write) is older
    than the retention that vacuum kept, so every file removed before it was deleted. Needs Delta's vacuum
    logging (on by default for local and HDFS storage); without it, or past the newest 30 commits, the
    table is maintained. A crashed write's stray files in a table skipped this way wait for its next commit.
#}
{% macro cdc_maintained_since_last_change(relation, history=none) %}
    {%- if not execute -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- set history = cdc_newest_commits(relation) if history is none else history -%}
    {%- if history | length < 3 or history[0]['operation'] != 'VACUUM END'
        or history[1]['operation'] != 'VACUUM START'
        or (fromjson(history[0]['operationParameters']) or {}).get('status') != 'COMPLETED' -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- set vacuum = fromjson(history[1]['operationParameters']) or {} -%}
    {%- set retention_ms = vacuum.get('specifiedRetentionMillis', vacuum.get('defaultRetentionMillis')) -%}
    {%- set changes = history | rejectattr('operation', 'in', ['VACUUM START', 'VACUUM END']) | list -%}
    {%- if retention_ms is none or not changes -%}
        {{- return(false) -}}
    {%- endif -%}
    {%- set kept = modules.datetime.timedelta(milliseconds=retention_ms | int) -%}
    {{- return(changes[0]['timestamp'] + kept <= history[1]['timestamp']) -}}
{% endmacro %}


{# The table's newest 30 commits (describe history), newest first. #}
{% macro cdc_newest_commits(relation) %}
    {{- return(run_query('describe history ' ~ relation ~ ' limit 30').rows) -}}
{% endmacro %}
