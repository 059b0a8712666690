{{ config(materialized='incremental', incremental_strategy='append') }}

{#
    One row per update sent as two messages (a before half and an after half sharing a sequence id),
    with the offsets of both. A pair whose second half lands in a later run is appended then, with that
    half's ingested_at. Halves still waiting for their partner are in staging only.
#}
{{ aliyun_update_pairs(ref('stg_aliyun_datahub_tuple__messages')) }}
