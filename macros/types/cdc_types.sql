{#
    The type layer: vendor type text -> seed lookup key, and a value text -> typed Spark value by one
    parse rule. The mapping itself lives in the seeds `cdc_types__<family>` (see seeds/seeds.yml);
    no vendor type name is spelled here.
#}

{#
    A vendor type text split into its parts, as a struct:
    - base: lower case, parameters "(...)" and signed/unsigned/zerofill removed, blanks collapsed,
      PostgreSQL arrays ("int4[]", "_int4") as "array": "int(11) unsigned" -> "int",
      "TIMESTAMP(6) WITH TIME ZONE" -> "timestamp with time zone", "93" -> "93";
    - params: the first parenthesized parameter list, trimmed ("decimal(10, 2)" -> ["10", "2"]);
    - is_unsigned;
    - lookup_key: the seed key to try first: "tinyint(1)" for a MySQL tinyint(1) while the var
      `cdc_tinyint1_as_boolean` is true (default), "<base> unsigned" for unsigned types, else the base.
      A type whose lookup_key has no seed row falls back to its base (see cdc_vendor_types).
#}
{% macro cdc_normalized_type(type_text) %}
    named_struct(
        'base', {{ cdc_type_base(type_text) }},
        'params', {{ cdc_type_params(type_text) }},
        'is_unsigned', {{ cdc_type_is_unsigned(type_text) }},
        'lookup_key', {{ cdc_type_lookup_key(type_text) }}
    )
{% endmacro %}


{% macro cdc_type_base(type_text) -%}
    regexp_replace(
        trim(regexp_replace(
            regexp_replace(lower(trim({{ type_text }})), '\\([^)]*\\)|\\b(unsigned|signed|zerofill)\\b', ' '),
            '\\s+', ' '
        )),
        '^_.+|.*\\[\\]$', 'array'
    )
{%- endmacro %}


{% macro cdc_type_params(type_text) -%}
    if(
        {{ type_text }} rlike '\\(',
        transform(
            split(regexp_extract({{ type_text }}, '\\(([^)]*)\\)', 1), ','),
            type_param -> trim(type_param)
        ),
        cast(array() as array<string>)
    )
{%- endmacro %}


{% macro cdc_type_is_unsigned(type_text) -%}
    coalesce(lower({{ type_text }}) rlike '\\bunsigned\\b', false)
{%- endmacro %}


{% macro cdc_type_lookup_key(type_text) -%}
    {%- set tinyint1_as_boolean = var('cdc_tinyint1_as_boolean', true) | string | lower in ['true', '1', 'yes'] -%}
    case
        {%- if tinyint1_as_boolean %}
            when lower(trim({{ type_text }})) rlike '^tinyint\\s*\\(\\s*1\\s*\\)' then 'tinyint(1)'
        {%- endif %}
        when {{ cdc_type_is_unsigned(type_text) }} then concat({{ cdc_type_base(type_text) }}, ' unsigned')
        else {{ cdc_type_base(type_text) }}
    end
{%- endmacro %}


{#
    The Spark type of a mapping: for `decimal_from_params`, decimal(p, s) from the type's own
    parameters (p capped at 38, "*" = 38, s clamped to 0..p, no scale = 0), else the seed's type.
#}
{% macro cdc_resolved_spark_type(seed_spark_type, parse_rule, params) -%}
    case
        when
            {{ parse_rule }} = 'decimal_from_params'
            and coalesce(try_cast(get({{ params }}, 0) as int), if(get({{ params }}, 0) = '*', 38, null)) > 0
            then concat(
                    'decimal(',
                    least(coalesce(try_cast(get({{ params }}, 0) as int), 38), 38),
                    ',',
                    least(
                        greatest(coalesce(try_cast(get({{ params }}, 1) as int), 0), 0),
                        least(coalesce(try_cast(get({{ params }}, 0) as int), 38), 38)
                    ),
                    ')'
                )
        else {{ seed_spark_type }}
    end
{%- endmacro %}


{#
    The typed Spark expression of one value text (`value`, a SQL expression) by its parse rule and
    Spark type, both known at compile time. Text that does not parse becomes NULL (try_ functions),
    never a failed query. `time_zone` (a SQL expression, an IANA zone id; none or NULL: var
    `cdc_default_source_time_zone`) is the source's zone: zone-less date-time text read into a
    `timestamp` (rules `cast` and `timestamp_with_zone`) is wall-clock time there (cdc_timestamp_in_zone).
#}
{% macro cdc_typed_value(value, parse_rule, spark_type, time_zone=none) -%}
    {%- set spark_type = spark_type | lower | replace(' ', '') -%}
    {%- if not modules.re.fullmatch('[a-z_]+(\\([0-9]+,[0-9]+\\))?', spark_type) -%}
        {{ exceptions.raise_compiler_error("cdc_typed_value: not a Spark type name: " ~ spark_type) }}
    {%- endif -%}
    {%- set default_zone = cdc_sql_string(var('cdc_default_source_time_zone', 'UTC')) -%}
    {%- set time_zone = default_zone if time_zone is none else 'coalesce(' ~ time_zone ~ ', ' ~ default_zone ~ ')' -%}
    {%- if parse_rule == 'cast' and spark_type == 'timestamp' -%}
        {{ cdc_timestamp_in_zone(value, time_zone) }}
    {%- elif parse_rule in ('cast', 'decimal_from_params') -%}
        try_cast({{ value }} as {{ spark_type }})
    {%- elif parse_rule == 'boolean_from_int' -%}
        coalesce(try_cast({{ value }} as decimal(38, 0)) != 0, try_cast({{ value }} as boolean))
    {%- elif parse_rule == 'epoch_millis' -%}
        try_cast(timestamp_millis(try_cast(try_cast({{ value }} as decimal(20, 0)) as bigint)) as {{ spark_type }})
    {%- elif parse_rule == 'epoch_micros' -%}
        try_cast(timestamp_micros(try_cast(try_cast({{ value }} as decimal(20, 0)) as bigint)) as {{ spark_type }})
    {%- elif parse_rule == 'epoch_seconds_fraction' -%}
        {#- Huawei DRS JSON MySQL timestamps: "1624614713.201" = epoch seconds with a millisecond fraction. -#}
        try_cast(
            timestamp_micros(try_cast(try_cast({{ value }} as decimal(20, 6)) * 1000000 as bigint))
            as {{ spark_type }}
        )
    {%- elif parse_rule == 'timestamp_with_zone' -%}
        {#- An offset ("+00:00", "+08", "+0800", " UTC", " Asia/Shanghai") is honoured; none: the source's zone. -#}
        try_cast(
            {{ cdc_timestamp_in_zone(
                "regexp_replace(" ~ value ~ ", '\\\\s*([+-][0-9]{2})([0-9]{2})$', '$1:$2')", time_zone
            ) }}
            as {{ spark_type }}
        )
    {%- elif parse_rule == 'base64' -%}
        try_to_binary({{ value }}, 'base64')
    {%- elif parse_rule == 'java_byte_list' -%}
        {#- A Java byte list ("[106, -103]") or text already turned into base64 by the staging model. -#}
        if(
            {{ value }} rlike '^\\s*\\[[-0-9, ]*\\]\\s*$',
            try_to_binary({{ java_byte_list_to_base64(value) }}, 'base64'),
            try_to_binary({{ value }}, 'base64')
        )
    {%- elif parse_rule == 'hex_bytea' -%}
        {#- PostgreSQL / GaussDB bytea hex output, with or without its \x prefix; 0x... hex. -#}
        try_to_binary(regexp_replace({{ value }}, '^(\\\\x|0x)', ''), 'hex')
    {%- elif parse_rule == 'bson_scalar' -%}
        {#- MongoDB Extended JSON wrappers {"$numberLong": "5"}, {"$oid": "..."} ... or the bare value. -#}
        try_cast({{ cdc_bson_unwrapped(value) }} as {{ spark_type }})
    {%- elif parse_rule == 'bson_date' -%}
        {#- {"$date": "2023-05-17T09:18:31.439Z"}, {"$date": {"$numberLong": "1684315111439"}}, ms or ISO text. -#}
        try_cast(
            if(
                {{ cdc_bson_date_text(value) }} rlike '^-?[0-9]+$',
                timestamp_millis(try_cast({{ cdc_bson_date_text(value) }} as bigint)),
                {{ cdc_timestamp_in_zone(cdc_bson_date_text(value), "'UTC'") }}
            )
            as {{ spark_type }}
        )
    {%- else -%}
        {{ exceptions.raise_compiler_error("cdc_typed_value: unknown parse rule " ~ parse_rule) }}
    {%- endif -%}
{%- endmacro %}


{#
    Date-time text as a `timestamp`, the same whatever spark.sql.session.timeZone: text with its own
    offset or zone after the time ("...08:00:00+08:00", "...Z", "... UTC", "... Asia/Shanghai") keeps it;
    zone-less text ("2024-03-01 08:00:00", "2024-03-01") is wall-clock time in `time_zone` (a SQL
    expression, an IANA zone id). A plain cast would read it in the session zone: it is read as
    timestamp_ntz instead and given the zone by name. An unknown zone gives NULL.
#}
{% macro cdc_timestamp_in_zone(text, time_zone) -%}
    if(
        {{ text }} rlike '[0-9]:[0-9]{2}(:[0-9]{2}(\\.[0-9]*)?)?\\s*[A-Za-z+-]',
        try_cast({{ text }} as timestamp),
        try_cast(concat(cast(try_cast({{ text }} as timestamp_ntz) as string), ' ', {{ time_zone }}) as timestamp)
    )
{%- endmacro %}


{% macro cdc_bson_unwrapped(value) -%}
    coalesce(
        nullif(regexp_extract(
            {{ value }},
            '^\\s*\\{\\s*"\\$(?:oid|numberLong|numberInt|numberDouble|numberDecimal)"\\s*:\\s*"?([^"}]*)"?\\s*\\}\\s*$',
            1
        ), ''),
        {{ value }}
    )
{%- endmacro %}


{% macro cdc_bson_date_text(value) -%}
    coalesce(
        nullif(regexp_extract(
            {{ value }}, '"\\$date"\\s*:\\s*(?:\\{\\s*"\\$numberLong"\\s*:\\s*)?"?([^"}]+)"?', 1
        ), ''),
        {{ value }}
    )
{%- endmacro %}


{# A Spark SQL string literal of any text (quotes and backslashes escaped). #}
{% macro cdc_sql_string(text) -%}
    '{{ text | string | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}


{# A quoted Spark identifier of any text: backticks doubled, never left bare. #}
{% macro cdc_quoted_identifier(text) -%}
    `{{ text | string | replace("`", "``") }}`
{%- endmacro %}


{#
    on-run-start: a run whose models read cdc_type_mappings without building it (a scheduled run: the table is
    built from the seeds alone, by `make seeds`) stops at once with one line when the table is missing, as it
    is after `dbt seed` alone, instead of failing its first model on a missing table.
#}
{% macro cdc_require_type_mappings() %}
    {%- set mappings_id = 'model.' ~ project_name ~ '.cdc_type_mappings' -%}
    {%- if not execute or flags.WHICH not in ('run', 'build') or mappings_id in selected_resources -%}
        {{- return('') -}}
    {%- endif -%}
    {%- for unique_id in selected_resources
        if unique_id in graph.nodes and mappings_id in graph.nodes[unique_id].depends_on.nodes -%}
        {%- set mappings = graph.nodes[mappings_id] -%}
        {%- if adapter.get_relation(database=none, schema=mappings.schema, identifier=mappings.alias) is none -%}
            {{- exceptions.raise_compiler_error(
                mappings.schema ~ '.' ~ mappings.alias ~ ' is missing (it is built from the seeds): run `make seeds`'
                ~ ' (or `dbt seed`, then `dbt run --select cdc_type_mappings`) before this run'
            ) -}}
        {%- endif -%}
        {{- return('') -}}
    {%- endfor -%}
{% endmacro %}


{#
    What typing a column depends on besides its vendor type: the type seeds' tables as last loaded or built
    (cdc_type_families and cdc_type_mappings: their newest Delta commit) and the var cdc_tinyint1_as_boolean.
    cdc_table_columns stores it with the columns it typed and retypes every column when it changes.
#}
{% macro cdc_type_seeds_version() %}
    {%- set parts = ['cdc_tinyint1_as_boolean=' ~ var('cdc_tinyint1_as_boolean', true)] -%}
    {%- for name in ['cdc_type_families', 'cdc_type_mappings'] -%}
        {#- ref before execute: dbt records the dependency while it parses. -#}
        {%- set relation = ref(name) -%}
        {%- set commit = none -%}
        {%- if execute and load_relation(relation) is not none -%}
            {%- set commit = run_query('describe history ' ~ relation ~ ' limit 1').rows[0] -%}
        {%- endif -%}
        {%- do parts.append(name ~ (' version ' ~ commit['version'] ~ ' of ' ~ commit['timestamp'] if commit else ' missing')) -%}
    {%- endfor -%}
    {{ return(parts | join(', ')) }}
{% endmacro %}


{#
    What the stored rows of a cdc_table_columns table were typed with: {type_seeds_version, has_typing_stamps
    (the table has typing_changed_in_batch: a table from before it gets its stamps in its next run)}.
#}
{% macro cdc_stored_typing(relation) %}
    {%- set stored = run_query('select * from ' ~ relation ~ ' limit 1') -%}
    {{ return({
        'type_seeds_version': stored.rows[0]['type_seeds_version'] if stored.rows else none,
        'has_typing_stamps': 'typing_changed_in_batch' in stored.column_names
    }) }}
{% endmacro %}
