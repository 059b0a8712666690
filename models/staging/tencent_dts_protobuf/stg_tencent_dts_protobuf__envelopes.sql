{{ config(enabled=cdc_models_enabled(staging='tencent_dts_protobuf')) }}

with

landed as (
    {{ landed_messages(['tencent_dts_protobuf']) }}
),

parsed as (
    select
        landed.*,
        cdc_dts_envelope(landed.value) as envelope
    from landed
)

select
    {{ staged_message_columns('parsed') }},
    parsed.envelope.version as envelope_version,
    parsed.envelope.total as part_total,
    parsed.envelope.index as part_index,
    parsed.envelope.data as part_data,
    case
        when parsed.envelope.error is not null then parsed.envelope.error
        when parsed.envelope.version != 1
            then concat('unsupported Envelope version ', parsed.envelope.version, ' (1 means serialized Entries)')
        when parsed.envelope.total < 1 or parsed.envelope.index >= parsed.envelope.total
            then concat('Envelope part ', parsed.envelope.index, ' of ', parsed.envelope.total)
    end as envelope_error,
    parsed.value
from parsed
