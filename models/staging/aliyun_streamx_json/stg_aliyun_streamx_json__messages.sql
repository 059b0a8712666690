{{ config(enabled=cdc_models_enabled(staging='aliyun_streamx_json')) }}

with

parsed as (
    {{ parsed_json_messages('aliyun_streamx_json', aliyun_streamx_json_schema(), operation='message.payload.op') }}
),

classified as (
    select
        parsed.*,
        parsed.message.payload.before.dataColumn as before_image,
        parsed.message.payload.after.dataColumn as after_image,
        transform(parsed.message.schema.dataColumn, data_column -> data_column.name) as column_names,
        transform(
            filter(
                parsed.message.schema.dataColumn,
                data_column -> data_column.type = {{ aliyun_streamx_base64_type() }}
            ),
            data_column -> data_column.name
        ) as base64_columns
    from parsed
),

checked_shape as (
    select
        classified.*,
        case
            {{ json_message_problems('classified', 'a DataWorks StreamX JSON message') }}
            when classified.message.payload is null then 'no payload'
            when classified.message.payload.op is null then 'no operation (payload.op)'
            when classified.op is null then concat('unknown operation: ', classified.message.payload.op)
            when
                classified.op in ('c', 'u', 'd', 't')
                and classified.message.schema.source.tableName is null
                then concat(classified.message.payload.op, ' without a table name (schema.source.tableName)')
            when classified.op = 'c' and classified.after_image is null
                then 'INSERT without an after image (payload.after.dataColumn)'
            when classified.op = 'd' and classified.before_image is null
                then 'DELETE without a before image (payload.before.dataColumn)'
            when classified.op = 'u' and classified.before_image is null and classified.after_image is null
                then concat(classified.message.payload.op, ' without a before or after image')
            -- null and the vendor's "-1" are an unknown sequenceId; anything else must be digits.
            when
                classified.message.payload.sequenceId != '-1'
                and not classified.message.payload.sequenceId rlike '^[0-9]{1,38}$'
                then concat('sequenceId is not a number: ', classified.message.payload.sequenceId)
            -- Unknown both ways is DataWorks' eventTime -1 (ordered first); no time at all is no shape it writes.
            when
                classified.op not in ('heartbeat', 'begin', 'commit')
                and coalesce(classified.message.payload.sequenceId, '-1') = '-1'
                and not coalesce(
                    classified.message.payload.timestamp.eventTime > 0
                    or classified.message.payload.timestamp.eventTime = -1,
                    false
                )
                then concat(
                        classified.message.payload.op,
                        ' without a sequenceId or a timestamp.eventTime to order it by'
                    )
            when
                exists(classified.column_names, column_name -> column_name is null)
                or size(array_distinct(classified.column_names)) != size(classified.column_names)
                then 'schema.dataColumn has a column without a name or a repeated name'
            when classified.message.payload.timestamp.eventTime >= {{ aliyun_max_epoch_millis() }}
                then concat('timestamp.eventTime out of range: ', classified.message.payload.timestamp.eventTime)
        end as shape_error
    from classified
),

bytes_values as (
    select
        checked_shape.*,
        -- BYTES values of both images, named before.<column> / after.<column>, to check as strict base64.
        if(
            checked_shape.shape_error is null,
            map_concat(
                cast(map() as map <string, string>),
                transform_keys(
                    map_filter(
                        coalesce(checked_shape.before_image, cast(map() as map <string, string>)),
                        (column_name, column_value) -> array_contains(checked_shape.base64_columns, column_name)
                    ),
                    (column_name, column_value) -> concat('before.', column_name)
                ),
                transform_keys(
                    map_filter(
                        coalesce(checked_shape.after_image, cast(map() as map <string, string>)),
                        (column_name, column_value) -> array_contains(checked_shape.base64_columns, column_name)
                    ),
                    (column_name, column_value) -> concat('after.', column_name)
                )
            ),
            null
        ) as base64_values
    from checked_shape
),

checked_bytes as (
    select
        bytes_values.*,
        {{ first_invalid_base64('bytes_values.base64_values') }} as base64_error
    from bytes_values
),

checked as (
    select
        checked_bytes.*,
        coalesce(
            checked_bytes.shape_error,
            concat('BYTES value is not strict base64: ', checked_bytes.base64_error)
        ) as quarantine_reason
    from checked_bytes
)

select
    {{ staged_message_columns('checked') }},
    checked.message.payload.op as vendor_operation,
    -- An INSERT with neither a sequenceId nor an eventTime is a row of a task's full load: a snapshot row.
    if(
        checked.op = 'c'
        and coalesce(checked.message.payload.sequenceId, '-1') = '-1'
        and checked.message.payload.timestamp.eventTime = -1,
        'r',
        checked.op
    ) as op,
    -- An update sent as two messages: the half is told by the image it carries.
    case
        when checked.op = 'u' and checked.after_image is null then 'before'
        when checked.op = 'u' and checked.before_image is null then 'after'
    end as update_half,
    -- Digits, or null when unknown (null or "-1").
    nullif(checked.message.payload.sequenceId, '-1') as sequence_id,
    nullif(checked.message.payload.scn, '') as scn,
    lower(checked.message.schema.source.dbType) as vendor_db_type,
    checked.message.schema.source.dbVersion as source_db_version,
    checked.message.schema.source.dbName as source_database,
    checked.message.schema.source.schemaName as source_schema,
    checked.message.schema.source.tableName as source_table,
    checked.before_image,
    checked.after_image,
    if(
        checked.quarantine_reason is null and checked.message.schema.dataColumn is not null,
        map_from_entries(
            transform(
                checked.message.schema.dataColumn,
                data_column -> struct(data_column.name, data_column.type)
            )
        ),
        null
    ) as column_types,
    coalesce(checked.message.schema.primaryKey, array()) as primary_key,
    {{ aliyun_epoch_millis('checked.message.payload.timestamp.eventTime') }} as event_ts,
    {{ aliyun_epoch_millis('checked.message.payload.timestamp.systemTime') }} as system_ts,
    {{ aliyun_epoch_millis('checked.message.payload.timestamp.checkpointTime') }} as checkpoint_ts,
    -- Oracle sources: the SCN is the source position; otherwise the sequenceId (none when unknown).
    coalesce(
        nullif(checked.message.payload.scn, ''), nullif(checked.message.payload.sequenceId, '-1')
    ) as source_position,
    nullif(checked.message.payload.ddl.text, '') as ddl_sql,
    -- A serialized Java object (base64): kept as opaque text, never decoded or deserialized.
    checked.message.payload.ddl.ddlMeta as ddl_meta,
    checked.message.version as format_version,
    {{ quarantine_columns('checked') }}
from checked
